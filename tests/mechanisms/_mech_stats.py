"""Statistical helpers for the mechanism tests (chi-square with pooled tails)."""

from __future__ import annotations

import numpy as np
from scipy import stats

ALPHA = 1e-3  # significance level of every distribution test in this directory


def chisquare_pvalue(observed: np.ndarray, expected_prob: np.ndarray, min_expected: float = 5.0) -> float:
    """p-value of Pearson's chi-square test, pooling cells with expected count < ``min_expected``.

    ``expected_prob`` must sum to 1 over the listed cells plus any tail mass, which is added to
    the last pooled cell (the caller includes tails as explicit cells when they matter).
    """
    observed = np.asarray(observed, dtype=float)
    expected = np.asarray(expected_prob, dtype=float) * observed.sum()
    pooled_obs, pooled_exp = [], []
    acc_o = acc_e = 0.0
    for o, e in zip(observed, expected):
        acc_o += o
        acc_e += e
        if acc_e >= min_expected:
            pooled_obs.append(acc_o)
            pooled_exp.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0 or acc_o > 0:
        pooled_obs[-1] += acc_o
        pooled_exp[-1] += acc_e
    pooled_exp = np.array(pooled_exp)
    pooled_exp *= np.sum(pooled_obs) / pooled_exp.sum()
    return float(stats.chisquare(pooled_obs, pooled_exp).pvalue)
