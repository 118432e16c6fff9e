"""The one result type of every training run: model, history, ledger and guarantees.

``guarantee`` is computed by :class:`~dpkit.accounting.tightest.TightestAccountant` from the
run's :class:`~dpkit.mechanisms.ledger.PrivacyLedger` (what the mechanisms drew) and covers the
returned ``model`` and ``models``: they are post-processing of the released values.
``paper_claim`` is what the paper's own theorem says of the run, a separately labelled
:class:`PaperClaim`, never an accountant's result (it may not be a valid bound).
``extra_guarantees`` hold further accountant results over named sub-ledgers (e.g. a label-only
guarantee), each labelled by its key.

Release and diagnostics: everything in a result except ``diagnostics`` is covered by the
printed ε: the models, the history of published values and test-set scores, the ledger, the
guarantees and the configuration (data-independent parameters, calibrated noise scales and
which agent published when). ``diagnostics`` holds what was computed on private data without
noise (the training risk and dual sums per round, the solver's largest gradient norm: the
config keys in :data:`DIAGNOSTIC_KEYS`), labelled :data:`~dpkit.algorithms.substrate.evaluation.DIAGNOSTIC_LABEL`.
:meth:`TrainingResult.to_dict` leaves it out unless asked.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from dpkit.accounting.base import AccountingResult
from dpkit.accounting.tightest import TightestAccountant
from dpkit.algorithms.substrate.data import Dataset
from dpkit.algorithms.substrate.evaluation import DIAGNOSTIC_LABEL, Evaluator, accuracies, accuracy
from dpkit.mechanisms.ledger import PrivacyLedger

__all__ = ["PaperClaim", "TrainingResult", "account", "finish", "DIAGNOSTIC_KEYS"]

DIAGNOSTIC_KEYS = ("max_grad_norm",)
"""Config keys an algorithm may set that are computed on private data without noise:
:func:`finish` moves them from ``config`` to ``diagnostics``."""


@dataclasses.dataclass(frozen=True)
class PaperClaim:
    """What a paper's own analysis claims for a run (reproduction only).

    Attributes
    ----------
    epsilon
        The claimed ε (None where the paper states no total).
    delta
        The claimed δ.
    rule
        The theorem or equation the number comes from, with the paper.
    valid
        Whether the claim is a valid upper bound for what the run drew (the ledger's
        guarantee says what is).
    notes
        Why it is or is not valid.
    """

    epsilon: float | None
    delta: float
    rule: str
    valid: bool
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["notes"] = list(self.notes)
        out["epsilon"] = _plain(self.epsilon)
        return out


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return value


def account(ledger: PrivacyLedger, delta: float) -> AccountingResult | None:
    """The tightest certified ε at ``delta`` of everything ``ledger`` recorded (None if empty)."""
    event = ledger.event()
    if event is None:
        return None
    return TightestAccountant(ledger.neighbouring).compose(event).get_epsilon(delta)


@dataclasses.dataclass(frozen=True)
class TrainingResult:
    """Outcome of one run of a (private) learning algorithm.

    Attributes
    ----------
    algorithm
        Registry name (``"admm"``, ``"pp-admm"``, ...).
    variant
        ``"corrected"`` (noise calibrated by dpkit's accountants), ``"paper"`` (the paper's own
        calibration) or ``"non-private"``.
    models
        ``(N, d)``: each agent's final public model.
    model
        The returned model (post-processing of released values).
    history
        Per-iteration record of published values and test-set scores
        (:class:`~dpkit.algorithms.substrate.evaluation.Evaluator`); covered by ε.
    ledger
        What the mechanisms drew, per agent.
    guarantee
        The tightest accountant's (ε, δ) over ``ledger``; None for a non-private run.
    paper_claim
        The paper's own claim, labelled; None where there is no paper claim.
    extra_guarantees
        Named further guarantees, each an accountant's result over a sub-ledger.
    accuracy, agent_accuracies
        Test accuracy of ``model`` and of each agent's model (None/() without a test set).
    seconds
        Wall time: of the whole call, noise calibration included, when the run comes from
        :func:`dpkit.algorithms.train` (the loop alone is then ``config["seconds_loop"]``);
        of the training loop when an algorithm function is called directly.
    config
        Every parameter of the run (budgets, calibrated noise scales, hyperparameters and
        where each default came from).
    notes
        Caveats.
    diagnostics
        Numbers computed on private data without noise, *not covered by ε*: ``history`` (per-round
        training risk and dual sum) and the :data:`DIAGNOSTIC_KEYS` the algorithm reported.
    """

    algorithm: str
    variant: str
    models: np.ndarray
    model: np.ndarray
    history: dict[str, list[float]]
    ledger: PrivacyLedger
    guarantee: AccountingResult | None
    paper_claim: PaperClaim | None
    accuracy: float | None
    agent_accuracies: tuple[float, ...]
    seconds: float
    config: dict[str, Any]
    notes: tuple[str, ...] = ()
    extra_guarantees: dict[str, AccountingResult] = dataclasses.field(default_factory=dict)
    diagnostics: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def epsilon(self) -> float | None:
        """The ledger's certified ε (None for a non-private run)."""
        return None if self.guarantee is None else self.guarantee.epsilon

    @property
    def epsilon_paper(self) -> float | None:
        """The paper's claimed ε (None without a claim)."""
        return None if self.paper_claim is None else self.paper_claim.epsilon

    def to_dict(self, diagnostics: bool = False) -> dict[str, Any]:
        """JSON-ready dictionary of the release; with ``diagnostics=True`` also a ``"diagnostics"``
        part (its ``"label"`` says that ε does not cover it)."""
        out = {
            "algorithm": self.algorithm,
            "variant": self.variant,
            "accuracy": self.accuracy,
            "agent_accuracies": list(self.agent_accuracies),
            "epsilon_paper": _plain(self.epsilon_paper),
            "epsilon_corrected": _plain(self.epsilon),
            "delta": None if self.guarantee is None else self.guarantee.delta,
            "iterations": self.config.get("iterations"),
            "seconds": self.seconds,
            "guarantee": None if self.guarantee is None else self.guarantee.to_dict(),
            "paper_claim": None if self.paper_claim is None else self.paper_claim.to_dict(),
            "extra_guarantees": {k: v.to_dict() for k, v in self.extra_guarantees.items()},
            "ledger": self.ledger.to_dict(),
            "model": _plain(self.model),
            "history": _plain(self.history),
            "config": _plain(self.config),
            "notes": list(self.notes),
        }
        if diagnostics:
            out["diagnostics"] = {"label": DIAGNOSTIC_LABEL, **_plain(self.diagnostics)}
        return out


def finish(
    algorithm: str, variant: str, models: np.ndarray, model: np.ndarray, evaluator: Evaluator,
    test: Dataset | None, ledger: PrivacyLedger, delta: float | None, seconds: float, config: dict[str, Any], *,
    paper_claim: PaperClaim | None = None, notes: tuple[str, ...] = (),
    extra_guarantees: dict[str, AccountingResult] | None = None,
) -> TrainingResult:
    """Assemble a :class:`TrainingResult`: account ``ledger`` at ``delta``, score ``model`` on ``test``
    and move the evaluator's diagnostics and the :data:`DIAGNOSTIC_KEYS` of ``config`` to ``diagnostics``."""
    guarantee = None if delta is None else account(ledger, delta)
    config = dict(config)
    diagnostics: dict[str, Any] = {"history": evaluator.diagnostics}
    diagnostics.update({key: config.pop(key) for key in DIAGNOSTIC_KEYS if key in config})
    return TrainingResult(
        algorithm=algorithm, variant=variant, models=np.asarray(models), model=np.asarray(model),
        history=evaluator.history, ledger=ledger, guarantee=guarantee, paper_claim=paper_claim,
        accuracy=None if test is None else accuracy(model, test),
        agent_accuracies=() if test is None else tuple(float(a) for a in accuracies(models, test)),
        seconds=seconds, config=config, notes=tuple(notes), extra_guarantees=dict(extra_guarantees or {}),
        diagnostics=diagnostics,
    )
