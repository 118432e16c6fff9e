"""Why counting cannot certify 0.9 of a Gaussian mechanism's ε at δ = 1e-5 from 10^7 samples.

For N(0, σ²) vs N(Δ, σ²) the likelihood ratio is monotone, so by the Neyman–Pearson lemma a
threshold event {x > t} has the largest Pr[M(D) ∈ S] among all events with its Pr[M(D′) ∈ S];
the counting bound ln((p1_lower − δ)/p2_upper) increases in p1 for fixed p2, so the best
threshold is the best single event. This script evaluates it with the *expected* counts
(an oracle: no selection noise, no Bonferroni) and exact Clopper–Pearson intervals at α = 0.05.

    python experiments/counting_limit.py
"""

import numpy as np
from scipy import stats

from dpkit.mechanisms.gaussian import gaussian_sigma

DELTA = 1e-5
for eps in (0.2, 1.0, 1.5):
    mu = 1.0 / gaussian_sigma(eps, DELTA, 1.0)
    for n in (5 * 10**6, 5 * 10**7, 5 * 10**8):  # outputs per input (10^7, 10^8, 10^9 in total)
        best = (-np.inf, 0.0)
        for t in np.linspace(0.0, 8.0, 4001):
            a, b = stats.norm.sf(t - mu) * n, stats.norm.sf(t) * n
            low = stats.beta.ppf(0.025, a, n - a + 1)
            up = stats.beta.isf(0.025, b + 1, n - b)
            if low > DELTA:
                best = max(best, (float(np.log(low - DELTA) - np.log(up)), float(t)))
        print(f"eps={eps}: {2 * n:.0e} samples -> best single-event bound {best[0]:.3f} = {best[0] / eps:.2f} of eps "
              f"(threshold {best[1]:.2f} sigma)")
