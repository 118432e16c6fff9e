"""A-DDP: distributed noisy SGD in which every user privatises its own upload (Cheng et al. 2020).

Algorithm (Cheng, Liu, Wang & Lu, "Adaptive Distributed Differential Privacy with SGD", AAAI 2020, Algorithm 1)::

    w_0 = 0
    for t = 1 .. T:
        for each user u (holding m_u records):
            J ~ Uniform{1..m_u};  g_u = clip_C(∇ℓ(w_{t−1}, x_J))         (lines 11–13)
            upload g_u + N(0, σ² I)                                        (line 14; one UserUpload.release)
        w_t = w_{t−1} − η (mean of the uploads + λ w_{t−1})                (line 17; λ = 0 in the paper)
    return the mean of w_{⌊T/10⌋+1} .. w_T                                 (tail averaging: post-processing)

There is no secure aggregation: the server sees each upload, so the privacy unit is one record of
one user's local data (replace-one). Every upload is drawn by
:class:`~dpkit.algorithms.a_ddp.upload.UserUpload`, which records the true event
``SampledWithoutReplacementEvent(GaussianEvent(σ, 2C), 1, m_u)`` in the user's ledger entry; the
run's ``guarantee`` is the tightest accountant's over that ledger (users in parallel: disjoint
records). The returned model is a function of the uploads only.

Variants
--------
``"corrected"`` (default): σ calibrated on the whole planned run of T rounds with the true
sensitivity 2C (:func:`~dpkit.algorithms.a_ddp.plan.corrected_plan`); its guarantee meets the
budget. ``"paper"``: the paper's calibration as published (advanced-composition split over the
estimated T = 10, analytic Gaussian at sensitivity C = 3, Theorem-1 stopping rule;
:func:`~dpkit.algorithms.a_ddp.plan.paper_plan`), reported as a
:class:`~dpkit.algorithms.substrate.result.PaperClaim`; its ledger still records sensitivity 2C, so the
guarantee exposes the mistake. The corrected variant is the default because the paper's
calibration is not a valid bound and sizes σ for 10 rounds while running tens of thousands.

Defaults (all data-independent; :mod:`dpkit.algorithms.a_ddp.plan` gives the derivations):
C = 1/2, T = 80·n/U rounds, λ = σ√(d/(U T))/10, η = min(1/L, 5/(λT)), the returned model the
mean of the last 90 % of the iterates. The SPEC's 20 users (1,800 Adult records each): accuracy
is set by the noise of the averaged uploads, σ√(d/(U T)), and at a given number of uploads
U·T more users per round raise each user's sampling rate U/n and with it σ, while fewer users
mean more rounds (run time); on Adult 20 users matched 10 users' accuracy in half the rounds
and beat 40 users. The paper's
100 records per user (≈ 360 users) give a model near the majority class
(docs/algorithms/a-ddp.md).

>>> from dpkit.algorithms.substrate.budget import Budget
>>> from dpkit.algorithms.substrate.data import make_synthetic
>>> from dpkit.algorithms.substrate.partition import partition
>>> parts = partition(make_synthetic(1200, 4, rng=0), 3, rng=0)
>>> result = train_a_ddp(parts, budget=Budget(1.0, 1e-5), iterations=200, rng=0)
>>> result.epsilon <= 1.0, result.ledger.draws(0) == 200
(True, True)
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Callable, Sequence

import numpy as np

from dpkit._validation import check_integer, check_rng
from dpkit.algorithms.a_ddp.claims import paper_claim
from dpkit.algorithms.a_ddp.plan import ADDPPlan, CLIP, corrected_plan, paper_plan
from dpkit.algorithms.a_ddp.upload import UserUpload
from dpkit.algorithms.substrate.admm_loops import check_parts
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import Dataset
from dpkit.algorithms.substrate.evaluation import Evaluator
from dpkit.algorithms.substrate.losses import Logistic
from dpkit.algorithms.substrate.result import TrainingResult, finish
from dpkit.algorithms.substrate.spec import AlgorithmSpec
from dpkit.mechanisms.ledger import PrivacyLedger

__all__ = ["server_step", "run_rounds", "train_a_ddp", "SPEC"]

Progress = Callable[[int, int], None] | None


def server_step(w: np.ndarray, mean_upload: np.ndarray, step_size: float, lam: float) -> np.ndarray:
    """w − η (mean upload + λ w): line 17 of Algorithm 1 with an L2 term (a function of public values).

    >>> server_step(np.ones(2), np.array([1.0, -1.0]), 0.5, 0.0)
    array([0.5, 1.5])
    """
    return w - step_size * (mean_upload + lam * w)


def run_rounds(parts: Sequence[Dataset], plan: ADDPPlan, rng: np.random.Generator, ledger: PrivacyLedger,
               on_round: Callable[[int, np.ndarray], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Run ``plan.rounds`` rounds; return (last model, mean of the models after ``plan.burn_in`` rounds).

    Every round, the users holding equally many records upload together through one
    :meth:`UserUpload.release_each <dpkit.mechanisms.base.Mechanism.release_each>` (one event in
    each user's ledger entry, as one ``release`` per user would record); user u takes part in
    the first ``plan.user_rounds[u]`` rounds. ``on_round(t, model)`` receives the current
    returned-model candidate (the running tail mean once t > ``plan.burn_in``).
    """
    d = parts[0].d
    groups = [_UploadGroup.of(parts, plan, m) for m in dict.fromkeys(p.n for p in parts)]
    w = np.zeros(d)
    tail_sum = np.zeros(d)
    start = plan.burn_in
    for t in range(plan.rounds):
        total = np.zeros(d)
        active = 0
        for i, group in enumerate(groups):
            if t >= group.first_stop:
                groups[i] = group = group.still_active(t)
            if group.agents.size:
                total += group.upload.release_each((group.X, group.y, w), rng=rng, ledger=ledger,
                                                   agents=group.agents).sum(axis=0)
                active += group.agents.size
        w = server_step(w, total / active, plan.step_size, plan.lam)
        if t >= start:
            tail_sum += w
        if on_round is not None:
            on_round(t + 1, tail_sum / (t + 1 - start) if t >= start else w)
    average = tail_sum / (plan.rounds - start) if plan.rounds else w
    return w, average


@dataclasses.dataclass(frozen=True)
class _UploadGroup:
    """The users holding ``upload.records`` records each: their stacked data and round limits."""

    upload: UserUpload
    agents: np.ndarray
    X: np.ndarray
    y: np.ndarray
    limits: np.ndarray
    first_stop: float

    @classmethod
    def of(cls, parts: Sequence[Dataset], plan: ADDPPlan, records: int) -> "_UploadGroup":
        agents = np.array([u for u, p in enumerate(parts) if p.n == records], dtype=np.intp)
        limits = np.array([plan.user_rounds[u] for u in agents])
        return cls(UserUpload(plan.sigma, plan.clip, records), agents, np.stack([parts[u].X for u in agents]),
                   np.stack([parts[u].y for u in agents]), limits, int(limits.min()))

    def still_active(self, t: int) -> "_UploadGroup":
        keep = self.limits > t
        limits = self.limits[keep]
        return _UploadGroup(self.upload, self.agents[keep], self.X[keep], self.y[keep], limits,
                            int(limits.min()) if limits.size else math.inf)


def train_a_ddp(parts: Sequence[Dataset], *, budget: Budget, iterations: int | None = None, variant: str = "corrected",
          rng: np.random.Generator | int | None = None, test: Dataset | None = None, progress: Progress = None,
          clip: float | None = None, step_size: float | None = None, lam: float | None = None,
          max_rounds: int | None = None, record_every: int | None = None) -> TrainingResult:
    """Train logistic regression with A-DDP over users holding ``parts`` (module docstring).

    Parameters
    ----------
    parts
        The users' local datasets (labels in {−1, +1}).
    budget
        Total (ε, δ) of one record over the whole run.
    iterations
        Corrected: the planned rounds T (None: 80·n/U). Paper: the paper's *estimated* T of the
        advanced-composition split (None: 10); the rounds run are then set by Theorem 1.
    variant
        ``"corrected"`` (default) or ``"paper"``.
    clip
        C (None: 1/2 corrected, 3 paper).
    step_size, lam
        η and λ (None: the defaults of :mod:`dpkit.algorithms.a_ddp.plan`; the paper variant
        uses η = 0.05 and λ = 0).
    max_rounds
        Paper variant only: cap on the rounds Theorem 1 admits (None: 80·n/U).
    record_every
        History thinning (None: about 50 records per run).
    """
    start_time = time.perf_counter()
    parts = check_parts(parts)
    gen = check_rng(rng)
    sizes = [p.n for p in parts]
    if variant == "corrected":
        if max_rounds is not None:
            raise ValueError("max_rounds applies to variant='paper' only (the corrected run is planned)")
        plan = corrected_plan(budget, sizes, parts[0].d, rounds=iterations, clip=CLIP if clip is None else clip,
                              step_size=step_size, lam=lam)
    elif variant == "paper":
        if lam is not None:
            raise ValueError("lam applies to variant='corrected' only (the paper has no regulariser)")
        kwargs = {k: v for k, v in (("clip", clip), ("step_size", step_size)) if v is not None}
        plan = paper_plan(budget, sizes, estimated_rounds=iterations, max_rounds=max_rounds, **kwargs)
    else:
        raise ValueError(f"variant must be 'corrected' or 'paper', got variant={variant!r}")
    every = max(1, plan.rounds // 50) if record_every is None else check_integer("record_every", record_every,
                                                                                 minimum=1)
    evaluator = Evaluator(Logistic(), parts, test, every)
    users = len(parts)
    evaluator.record(0, np.zeros((users, parts[0].d)))

    def on_round(t: int, model: np.ndarray) -> None:
        final = t == plan.rounds
        if evaluator.due(t, final):  # the users' models are built only for the rounds recorded
            evaluator.record(t, np.broadcast_to(model, (users, model.size)), force=final)
        if progress:
            progress(t, plan.rounds)

    ledger = budget.ledger(users)
    _, model = run_rounds(parts, plan, gen, ledger, on_round)
    claim = None
    if variant == "paper":
        claim = paper_claim(budget.epsilon, budget.delta, plan.details["estimated_rounds"], plan.clip, plan.rounds,
                            plan.details["rounds_allowed"])
    config = {"variant": variant, "iterations": plan.rounds, "users": users, "records": sizes, "d": parts[0].d,
              "budget": budget.to_dict(), **plan.to_dict()}
    notes = ("privacy unit: one record of one user's data (replace-one); the server sees every upload",
             f"returned model: mean of the iterates after round {plan.burn_in} (post-processing of the uploads)")
    return finish("a-ddp", variant, np.broadcast_to(model, (users, model.size)), model, evaluator, test, ledger,
                  budget.delta, time.perf_counter() - start_time, config, paper_claim=claim, notes=notes)


def _runner(parts: Sequence[Dataset], test: Dataset | None, graph: Any, *, budget: Budget | None,
            iterations: int | None, variant: str, rng: np.random.Generator, progress: Progress,
            **options: Any) -> TrainingResult:
    if budget is None:
        raise ValueError("a-ddp is private: give a budget (epsilon)")
    return train_a_ddp(parts, budget=budget, iterations=iterations, variant=variant, rng=rng, test=test, progress=progress,
                 **options)


SPEC = AlgorithmSpec(
    name="a-ddp", runner=_runner, topology="star", agents=20, n_train=36000, delta=1e-5,
    description="A-DDP: users upload noisy clipped one-record gradients to a server (Cheng et al. 2020)",
    options=("clip", "step_size", "lam", "max_rounds", "record_every"),
)
