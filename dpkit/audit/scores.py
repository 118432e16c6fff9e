"""Score audits for trained models: canary scores → ε lower bounds.

Inputs are attack scores of canaries that were included in training ("in") and left out
("out"); **higher scores must mean "in"**. Three estimators, one result type:

* :func:`audit_scores` — Clopper–Pearson over thresholds (Jagielski et al. 2020, Alg. 2;
  Nasr et al. 2021): ``ε ≥ ln((TPR_lower − δ)/FPR_upper)`` and the mirror bound on
  (TNR, FNR), with multiple-testing control (Bonferroni over all thresholds, or a split:
  choose the threshold on one part and certify on the other).
* :func:`audit_scores_gdp` — the GDP route (Nasr et al. 2023, Sec. 4): a lower bound on μ from
  Clopper–Pearson bounds on FPR and FNR, then the ε of μ-GDP at δ. **Valid only under the
  assumption that the trade-off curve is Gaussian**; it is labelled so in the result.
* :func:`audit_one_run` — one training run (Steinke, Nasr & Jagielski 2023, Thm. 3.3 and
  App. D): canaries included independently with probability 1/2, the auditor guesses for
  the top/bottom scores; with ``δ > 0`` the p-value carries the ``2 m δ · max_i …`` term.

References
----------
.. [1] M. Jagielski, J. Ullman, A. Oprea, NeurIPS 2020, arXiv:2006.07709v1, Algorithm 2.
.. [2] M. Nasr, J. Hayes, T. Steinke, B. Balle, F. Tramèr, M. Jagielski, N. Carlini,
       A. Terzis, "Tight Auditing of Differentially Private Machine Learning", USENIX Security
       2023, arXiv:2302.07956v1, Sec. 4 (GDP estimate).
.. [3] T. Steinke, M. Nasr, M. Jagielski, "Privacy Auditing with One (1) Training Run",
       NeurIPS 2023, arXiv:2305.08846v1, Theorem 3.3, Appendix D.
.. [4] J. Dong, A. Roth, W. Su, "Gaussian Differential Privacy", JRSS-B 2022, Cor. 2.13.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np
from scipy import special, stats

from dpkit._bisection import threshold_bracket
from dpkit._validation import check_integer, check_open_unit, check_rng, check_unit_interval
from dpkit.accounting.gdp_curve import gdp_delta
from dpkit.audit.statistics import cp_lower, cp_upper

__all__ = [
    "ScoreAuditResult",
    "audit_scores",
    "audit_scores_gdp",
    "audit_one_run",
    "one_run_p_value",
    "gdp_epsilon",
]


_REFERENCES: dict[str, tuple[str, ...]] = {
    "clopper-pearson": ("jagielski2020auditing", "clopper1934use"),
    "gdp": ("nasr2023tight", "dong2022gaussian", "clopper1934use"),
    "one-run": ("steinke2023privacy",),
}
"""Estimator (``ScoreAuditResult.method``) → bibliography keys of the papers it implements."""


@dataclasses.dataclass(frozen=True)
class ScoreAuditResult:
    """An ε lower bound from canary scores, and how it was obtained.

    Attributes
    ----------
    epsilon_lower_bound
        Holds with probability ≥ ``confidence`` (for the GDP route: only if the trade-off
        curve is Gaussian, see ``assumption``). 0.0 means no evidence.
    method
        ``"clopper-pearson"``, ``"gdp"`` or ``"one-run"``.
    confidence, delta
        Inputs, copied back.
    strategy
        Multiple-testing control (``"bonferroni"``, ``"split"``, ``"fixed"``).
    threshold
        The score threshold (or number of guesses for one-run) behind the bound.
    n_in, n_out
        Number of "in" and "out" scores used.
    details
        Counts and intermediate bounds (TPR/FPR bounds, μ lower bound, guesses, ...).
    assumption
        ``None`` when the bound needs no assumption; otherwise what it relies on.
    references
        Bibliography keys (those of :mod:`dpkit.report.bibliography`) of the estimator.
    """

    epsilon_lower_bound: float
    method: str
    confidence: float
    delta: float
    strategy: str
    threshold: float | None
    n_in: int
    n_out: int
    details: dict[str, Any]
    assumption: str | None = None
    references: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary of every field."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def _scores(name: str, values: Any) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError(f"{name} must contain at least one score, got an empty array")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {int(np.sum(~np.isfinite(arr)))} non-finite scores")
    return arr


def _counts(in_s: np.ndarray, out_s: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Numbers of in/out scores ``≥ t`` for every threshold ``t`` (guess "in" when score ≥ t)."""
    tp = len(in_s) - np.searchsorted(np.sort(in_s), thresholds, side="left")
    fp = len(out_s) - np.searchsorted(np.sort(out_s), thresholds, side="left")
    return tp, fp


def _cp_bounds(tp, fp, n_in, n_out, alpha, delta):
    """Per threshold, the better of the two directions, each using two bounds at alpha/2."""
    with np.errstate(divide="ignore", invalid="ignore"):
        tpr_lo, fpr_up = cp_lower(tp, n_in, alpha / 2), cp_upper(fp, n_out, alpha / 2)
        tnr_lo, fnr_up = cp_lower(n_out - fp, n_out, alpha / 2), cp_upper(n_in - tp, n_in, alpha / 2)
        e1 = np.where(tpr_lo > delta, np.log(np.maximum(tpr_lo - delta, 1e-300)) - np.log(fpr_up), -np.inf)
        e2 = np.where(tnr_lo > delta, np.log(np.maximum(tnr_lo - delta, 1e-300)) - np.log(fnr_up), -np.inf)
    return np.maximum(e1, e2), tpr_lo, fpr_up


def _check_common(confidence: float, delta: float, strategy: str) -> tuple[float, float]:
    confidence = check_open_unit("confidence", confidence)
    delta = check_unit_interval("delta", delta, include_one=False)
    if strategy not in ("bonferroni", "split"):
        raise ValueError(f"strategy must be 'bonferroni' or 'split', got strategy={strategy!r}")
    return confidence, delta


def _split(in_s: np.ndarray, out_s: np.ndarray, rng: Any, fraction: float):
    gen = check_rng(rng)
    fraction = check_open_unit("split_fraction", fraction)
    pi, po = gen.permutation(len(in_s)), gen.permutation(len(out_s))
    ki, ko = int(round(fraction * len(in_s))), int(round(fraction * len(out_s)))
    if min(ki, ko, len(in_s) - ki, len(out_s) - ko) < 1:
        raise ValueError("strategy='split' needs at least 2 in and 2 out scores")
    return in_s[pi[:ki]], out_s[po[:ko]], in_s[pi[ki:]], out_s[po[ko:]]


def audit_scores(in_scores: Sequence[float], out_scores: Sequence[float], *, delta: float = 0.0,
                 confidence: float = 0.95, strategy: str = "bonferroni", split_fraction: float = 0.5,
                 rng: Any = 0) -> ScoreAuditResult:
    """Clopper–Pearson ε lower bound from in/out canary scores.

    For every threshold ``t`` (each distinct score) the attack "in iff score ≥ t" gives
    ``ε ≥ ln((TPR − δ)/FPR)`` and ``ε ≥ ln((TNR − δ)/FNR)`` for an (ε, δ)-DP training run
    (Kairouz et al. 2015, Thm. 2.1 hypothesis-testing view). With ``strategy="bonferroni"``
    each of the ``T`` thresholds gets level ``α/T``; with ``"split"`` the threshold is chosen
    on a random ``split_fraction`` of the scores and certified at level ``α`` on the rest.

    Returns
    -------
    ScoreAuditResult
        ``method="clopper-pearson"``; ``details`` holds the counts and bounds at the chosen threshold.

    Examples
    --------
    >>> r = audit_scores([3.0, 2.5, 2.0, 1.0], [0.0, -1.0, 0.5, 0.2])
    >>> round(r.epsilon_lower_bound, 4)
    0.0
    """
    confidence, delta = _check_common(confidence, delta, strategy)
    in_s, out_s = _scores("in_scores", in_scores), _scores("out_scores", out_scores)
    alpha = 1.0 - confidence
    if strategy == "bonferroni":
        thresholds = np.unique(np.concatenate([in_s, out_s]))
        tp, fp = _counts(in_s, out_s, thresholds)
        eps, tpr_lo, fpr_up = _cp_bounds(tp, fp, len(in_s), len(out_s), alpha / len(thresholds), delta)
        i = int(np.argmax(eps))
        fit_in, fit_out = in_s, out_s
    else:
        sel_in, sel_out, fit_in, fit_out = _split(in_s, out_s, rng, split_fraction)
        cand = np.unique(np.concatenate([sel_in, sel_out]))
        tp_s, fp_s = _counts(sel_in, sel_out, cand)
        eps_s, _, _ = _cp_bounds(tp_s, fp_s, len(sel_in), len(sel_out), alpha, delta)
        thresholds = cand[[int(np.argmax(eps_s))]]
        tp, fp = _counts(fit_in, fit_out, thresholds)
        eps, tpr_lo, fpr_up = _cp_bounds(tp, fp, len(fit_in), len(fit_out), alpha, delta)
        i = 0
    best = float(eps[i]) if np.isfinite(eps[i]) else 0.0
    details = {"true_positives": int(tp[i]), "false_positives": int(fp[i]), "n_in_certify": len(fit_in),
               "n_out_certify": len(fit_out), "tpr_lower": float(tpr_lo[i]), "fpr_upper": float(fpr_up[i]),
               "thresholds_tested": int(len(thresholds))}
    return ScoreAuditResult(max(best, 0.0), "clopper-pearson", confidence, delta, strategy,
                            float(thresholds[i]), len(in_s), len(out_s), details,
                            references=_REFERENCES["clopper-pearson"])


def gdp_epsilon(mu: float, delta: float) -> float:
    """ε of μ-GDP at ``delta``, rounded down (a lower bound, for the audit): bisection on a bracket that
    grows, with the lower end of :func:`dpkit.accounting.gdp_curve.gdp_delta`, so δ_μ(result) > delta
    holds for the exact curve (Dong, Roth & Su 2022, Cor. 2.13)."""
    delta = check_open_unit("delta", delta)
    if mu <= 0 or gdp_delta(mu, 0.0, upper=False) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while gdp_delta(mu, hi, upper=False) > delta:
        lo, hi = hi, 2 * hi
    return threshold_bracket(lambda eps: gdp_delta(mu, eps, upper=False) <= delta, lo, hi, steps=100)[0]


def audit_scores_gdp(in_scores: Sequence[float], out_scores: Sequence[float], *, delta: float,
                     confidence: float = 0.95, strategy: str = "bonferroni", split_fraction: float = 0.5,
                     rng: Any = 0) -> ScoreAuditResult:
    """ε lower bound through a μ lower bound, **assuming a Gaussian trade-off curve**.

    At each threshold, ``μ ≥ Φ⁻¹(1 − FPR_upper) − Φ⁻¹(FNR_upper)`` for μ-GDP, because
    μ-GDP means ``FNR ≥ Φ(Φ⁻¹(1 − FPR) − μ)`` for every test (Dong et al. 2022, Def. 2.7).
    The best μ bound (Bonferroni over thresholds, or split) is turned into the ε that μ-GDP
    gives at ``delta``. The result is a valid lower bound only if the mechanism's privacy is
    exactly described by some G_μ (e.g. the Gaussian mechanism, DP-SGD in the CLT regime);
    ``assumption`` says so.
    """
    confidence, delta = _check_common(confidence, delta, strategy)
    delta = check_open_unit("delta", delta)
    in_s, out_s = _scores("in_scores", in_scores), _scores("out_scores", out_scores)
    alpha = 1.0 - confidence

    def mu_bounds(ins, outs, thr, level):
        tp, fp = _counts(ins, outs, thr)
        fpr_up = cp_upper(fp, len(outs), level / 2)
        fnr_up = cp_upper(len(ins) - tp, len(ins), level / 2)
        with np.errstate(divide="ignore", invalid="ignore"):
            mu = stats.norm.isf(fpr_up) - stats.norm.ppf(fnr_up)
        return np.nan_to_num(mu, nan=-np.inf, posinf=np.inf), tp, fp, fpr_up, fnr_up

    if strategy == "bonferroni":
        thresholds = np.unique(np.concatenate([in_s, out_s]))
        mu, tp, fp, fpr_up, fnr_up = mu_bounds(in_s, out_s, thresholds, alpha / len(thresholds))
        i = int(np.argmax(mu))
        fit_in, fit_out = in_s, out_s
    else:
        sel_in, sel_out, fit_in, fit_out = _split(in_s, out_s, rng, split_fraction)
        cand = np.unique(np.concatenate([sel_in, sel_out]))
        mu_s = mu_bounds(sel_in, sel_out, cand, alpha)[0]
        thresholds = cand[[int(np.argmax(mu_s))]]
        mu, tp, fp, fpr_up, fnr_up = mu_bounds(fit_in, fit_out, thresholds, alpha)
        i = 0
    mu_lo = max(float(mu[i]), 0.0)
    eps = gdp_epsilon(mu_lo, delta) if math.isfinite(mu_lo) else math.inf
    details = {"mu_lower_bound": mu_lo, "true_positives": int(tp[i]), "false_positives": int(fp[i]),
               "fpr_upper": float(fpr_up[i]), "fnr_upper": float(fnr_up[i]), "thresholds_tested": int(len(thresholds))}
    return ScoreAuditResult(eps, "gdp", confidence, delta, strategy, float(thresholds[i]), len(in_s), len(out_s),
                            details, assumption="the trade-off curve is Gaussian (mu-GDP); not a certified bound otherwise",
                            references=_REFERENCES["gdp"])


def one_run_p_value(m: int, r: int, v: int, epsilon: float, delta: float = 0.0) -> float:
    """p-value of ``≥ v`` correct guesses out of ``r`` under (ε, δ)-DP (Steinke et al. 2023).

    ``β = Pr[Binomial(r, q) ≥ v]`` with ``q = e^ε/(1 + e^ε)`` (Thm. 3.3), plus the δ term of
    Appendix D: ``2 m δ · max_{1≤i≤v} Pr[v − i ≤ Binomial(r, q) < v] / i``.
    """
    m = check_integer("m", m, minimum=1)
    r = check_integer("r", r, minimum=0)
    v = check_integer("v", v, minimum=0)
    if not v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m, got v={v}, r={r}, m={m}")
    q = special.expit(epsilon)
    beta = float(stats.binom.sf(v - 1, r, q))
    if delta > 0 and v > 0:
        pmf = stats.binom.pmf(np.arange(v - 1, -1, -1), r, q)  # pmf(v-1), pmf(v-2), ..., pmf(0)
        alpha_term = float(np.max(np.cumsum(pmf) / np.arange(1, v + 1)))
        beta += alpha_term * delta * 2 * m
    return min(beta, 1.0)


def audit_one_run(scores: Sequence[float], included: Sequence[bool], *, delta: float = 0.0, confidence: float = 0.95,
                  num_guesses: int | Sequence[int] | None = None, num_negative_guesses: int = 0) -> ScoreAuditResult:
    """ε lower bound from a single training run (Steinke, Nasr & Jagielski 2023).

    Parameters
    ----------
    scores
        Score of each of the ``m`` canaries (higher = more likely included).
    included
        Whether each canary was included; **each must have been included independently with
        probability 1/2** before training, otherwise the bound is invalid.
    num_guesses
        Number ``k₊`` of top-scored canaries guessed "in" (and ``num_negative_guesses``
        bottom-scored guessed "out"). A sequence tries each value with a Bonferroni
        correction; ``None`` tries ``m/100, m/50, m/20, m/10, m/5, m/2`` (at least 1).

    Returns
    -------
    ScoreAuditResult
        ``method="one-run"``; the largest ε whose p-value is below ``1 − confidence``
        (bisection, rounded down); ``details`` has ``m``, ``r``, ``v``.
    """
    confidence = check_open_unit("confidence", confidence)
    delta = check_unit_interval("delta", delta, include_one=False)
    s = _scores("scores", scores)
    inc = np.asarray(included)
    if inc.shape != s.shape:
        raise ValueError(f"included must have the same shape as scores, got {inc.shape} and {s.shape}")
    inc = inc.astype(bool)
    m = len(s)
    neg = check_integer("num_negative_guesses", num_negative_guesses, minimum=0)
    if num_guesses is None:
        grid = sorted({max(1, m // d) for d in (100, 50, 20, 10, 5, 2)})
    elif isinstance(num_guesses, (int, np.integer)):
        grid = [check_integer("num_guesses", num_guesses, minimum=1)]
    else:
        grid = sorted({check_integer("num_guesses", g, minimum=1) for g in num_guesses})
    if max(grid) + neg > m:
        raise ValueError(f"num_guesses + num_negative_guesses must be <= m={m}, got {max(grid)} + {neg}")
    alpha = (1.0 - confidence) / len(grid)
    order = np.argsort(-s, kind="stable")
    best = (0.0, grid[0], 0, 0)
    for k in grid:
        v = int(inc[order[:k]].sum()) + (int((~inc[order[m - neg:]]).sum()) if neg else 0)
        r = k + neg
        if one_run_p_value(m, r, v, 0.0, delta) >= alpha:
            eps = 0.0
        else:
            lo, hi = 0.0, 1.0
            while one_run_p_value(m, r, v, hi, delta) < alpha:
                lo, hi = hi, 2 * hi
                if hi > 1e4:
                    break
            for _ in range(60):
                mid = 0.5 * (lo + hi)
                if one_run_p_value(m, r, v, mid, delta) < alpha:
                    lo = mid
                else:
                    hi = mid
            eps = lo
        if eps > best[0] or k == grid[0]:
            best = (eps, k, r, v) if eps >= best[0] else best
    eps, k, r, v = best
    details = {"m": m, "guesses": r, "correct": v, "positive_guesses": k, "negative_guesses": neg,
               "guess_counts_tried": grid}
    return ScoreAuditResult(eps, "one-run", confidence, delta, "bonferroni" if len(grid) > 1 else "fixed",
                            float(k), int(inc.sum()), int((~inc).sum()), details, references=_REFERENCES["one-run"])
