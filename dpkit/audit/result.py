"""The result of a black-box audit: the bound, the test of the claim, and how they were obtained."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

__all__ = ["AuditResult"]


def _jsonable(value: Any) -> Any:
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return _jsonable(value.tolist())
    return value


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`dpkit.audit.audit`.

    Attributes
    ----------
    epsilon_lower_bound
        With probability ≥ ``confidence`` (over the audit's own randomness) the mechanism is
        not (ε, ``claimed_delta``)-DP for any ε below this number. ``0.0`` means no evidence.
    violation
        ``epsilon_lower_bound > claimed_epsilon``: the claim is contradicted.
    p_value
        p-value of H0 "the mechanism is (claimed_epsilon, claimed_delta)-DP" (Bonferroni over
        the confirmed candidates); ``p_value ≤ 1 − confidence`` iff ``violation``.
    witness
        The input pair, the event (or attack) and the counts behind the bound. When the event
        is a float-bit event of a refutation, ``witness["float_bits_false"]`` holds the verdict
        of the values alone (bound, violation, event) beside it.
    samples
        Mechanism outputs drawn in total (selection + confirmation, both inputs).
    seconds
        Wall-clock time of the audit.
    claimed_epsilon, claimed_delta, confidence, seed
        The inputs, copied back.
    method
        How the bound was obtained (selection/confirmation scheme, interval, correction).
    candidates
        Number of confirmed candidates the error budget was split over.
    notes
        Caveats (e.g. pairs skipped because the mechanism rejected them).
    references
        Bibliography keys (those of :mod:`dpkit.report.bibliography`) of the methods the bound
        rests on: the confidence interval and, when the witness event is a learned score, the
        classifier attack (Bichsel et al. 2021).
    detectable_epsilon
        On a pass (no violation), what the budget could have seen: a mechanism whose witness
        event had probability ratio ``e^X`` (with the same probability on D′) would have been
        flagged with probability ≥ ``confidence``, where ``X = detectable_epsilon``
        (:func:`dpkit.audit.statistics.detectable_epsilon`; ``inf`` if no ratio would do).
        ``None`` on a violation or when nothing was confirmed.
    assumption
        ``None`` when the bound needs no assumption; otherwise what it relies on (the
        Gaussian trade-off curve route of :mod:`dpkit.audit.curve`).
    float_check
        ``float_events=True`` only: what the replay check of :mod:`dpkit.audit.float_events` did,
        ``"replayed on pairs [...]..."`` or ``"not run: ..."`` with the reason (then no error
        budget was spent on it); ``None`` without ``float_events``.
    sample_plan
        ``samples="auto"`` only: the confirmation outputs per input, the target power, the power at
        the selection's estimates of the witness event, the smallest true ε refuted with the
        target power, and the predicted run time (:class:`dpkit.audit.sample_plan.SamplePlan`).
    throughput
        The pilot's cost per call and per output, the workers used and why, and every run-time
        estimate reported as ``[elapsed, predicted total]`` seconds (:mod:`dpkit.audit.throughput`).
    stopping_samples
        Sequential mode: outputs per input at the stopping time, the time the reported
        (anytime-valid) bound refers to; ``None`` in fixed-sample mode.
    """

    epsilon_lower_bound: float
    violation: bool
    p_value: float
    witness: dict[str, Any]
    samples: int
    seconds: float
    claimed_epsilon: float
    claimed_delta: float
    confidence: float
    seed: Any
    method: str
    candidates: int = 1
    notes: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    detectable_epsilon: float | None = None
    assumption: str | None = None
    stopping_samples: int | None = None
    float_check: str | None = None
    sample_plan: dict[str, Any] | None = None
    throughput: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary of every field (infinities as the strings ``"inf"``/``"-inf"``)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["seed"] = self.seed if isinstance(self.seed, (int, type(None))) else repr(self.seed)
        return _jsonable(out)
