"""Why counting cannot certify 0.9 of a Gaussian mechanism's ε at δ = 1e-5 from 10^7 samples.

For N(0, σ²) vs N(Δ, σ²) the likelihood ratio is monotone, so by the Neyman–Pearson lemma a
threshold event {x > t} has the largest Pr[M(D) ∈ S] among all events with its Pr[M(D′) ∈ S];
both counting bounds below increase in p1 for fixed p2, so the best threshold is the best single
event. This script evaluates them with the *expected* counts (an oracle: no selection noise, no
Bonferroni) at α = 0.05:

* ``two-sided CP``: ln((p1_lower − δ)/p2_upper), one-sided Clopper–Pearson bounds at α/2 each;
* ``conditional``: the audit's confirmation (dpkit.audit.statistics.poisson_epsilon_lower_bound),
  Poisson counts at the capped mean, one Clopper–Pearson bound on K1 | K1 + K2 after the δ allowance.

    python experiments/counting_limit.py
"""

import numpy as np
from scipy import special, stats

from dpkit.audit.statistics import logit_cp_lower, poisson_sample_mean, poisson_test
from dpkit.mechanisms.gaussian import gaussian_sigma

DELTA, ALPHA = 1e-5, 0.05
THRESHOLDS = np.linspace(0.0, 8.0, 4001)
for eps in (0.2, 1.0, 1.5):
    mu = 1.0 / gaussian_sigma(eps, DELTA, 1.0)
    p1, p2 = stats.norm.sf(THRESHOLDS - mu), stats.norm.sf(THRESHOLDS)
    for n in (5 * 10**6, 5 * 10**7, 5 * 10**8):  # outputs per input (10^7, 10^8, 10^9 in total)
        with np.errstate(divide="ignore", invalid="ignore"):
            low = special.betaincinv(p1 * n, n - p1 * n + 1, ALPHA / 2)
            up = special.betaincinv(p2 * n + 1, n - p2 * n, 1 - ALPHA / 2)
            two_sided = np.where(low > DELTA, np.log(low - DELTA) - np.log(up), -np.inf)
        mean, spent = poisson_sample_mean(n)
        allowance, level = poisson_test(mean, DELTA, ALPHA, spent)
        conditional = logit_cp_lower(np.floor(p1 * mean) - allowance, np.ceil(p2 * mean), level)
        print(f"eps={eps}: {2 * n:.0e} samples -> best single-event bound: two-sided CP {two_sided.max() / eps:.3f} "
              f"of eps (threshold {THRESHOLDS[two_sided.argmax()]:.2f} sigma), conditional {conditional.max() / eps:.3f} "
              f"(threshold {THRESHOLDS[conditional.argmax()]:.2f} sigma)")
