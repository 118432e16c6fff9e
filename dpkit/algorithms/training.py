"""One training call: split, partition, connect, budget, run, and record where the data came from.

:func:`train` is the library entry point behind ``dpkit train``, the demo and the benchmarks:

1. split the data (seeded) into ``n_train`` training rows and a test set;
2. partition the training rows equally over the agents;
3. build the communication graph (graph-topology algorithms only);
4. wrap (ε, δ) in a :class:`~dpkit.algorithms.substrate.budget.Budget` (private algorithms only);
5. call the algorithm's ``SPEC.runner`` and add the run's provenance to ``result.config``:
   ``seed``, ``data``, ``n_train``, ``n_test``, ``dimension``, ``agents``, ``epsilon_target``,
   ``delta_target`` and ``majority_accuracy`` (the test accuracy of the constant majority-class
   predictor, the floor a model must beat).

A dataset loaded with ``private_scaling`` (a file whose columns have no public ranges) is
scaled after step 4: the ranges are released from the pooled training rows with Gaussian noise
(:mod:`~dpkit.algorithms.substrate.private_ranges`), the budget carries that release into the
run's calibration and ledger, and the test rows are scaled by the released ranges; the result's
config says so (``scaling``) and holds the ranges (``column_ranges``). With ``clip_quantile`` q the
columns are clipped instead at private estimates of their (1 − q)- and q-quantiles, chosen by the
exponential mechanism and charged the same way (:mod:`~dpkit.algorithms.substrate.private_quantiles`).
A non-private algorithm takes the training rows' own ranges.

A private run of the ``"corrected"`` variant on data with a ``bias`` column ends with the
class-prior fallback (:mod:`~dpkit.algorithms.substrate.prior_fallback`): each agent releases
noisy counts of its training rows that the trained model gets right and that are +1, and the run
returns whichever of the trained model and the two constant predictors has the most noisy
correct answers; the budget plans the release (its noise is calibrated with the run's) and the
ledger records it. ``config["fallback"]`` says what was chosen.

``result.seconds`` is the wall time of the whole algorithm call: the ranges (if any), noise
calibration, the training loop, the fallback (if any) and scoring (the algorithm's loop alone is ``config["seconds_loop"]``).

The seed feeds ``numpy.random.SeedSequence(seed).spawn(4)``: the children seed the split, the
partition, the graph and the algorithm's noise, in that order, so the same seed gives the same
run.

>>> from dpkit.algorithms.substrate.data import make_synthetic
>>> result = train("dp-logreg", make_synthetic(3000, 5, rng=0), epsilon=1.0, seed=0)
>>> result.epsilon <= 1.0, result.accuracy > result.config["majority_accuracy"]
(True, True)
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any, Callable

import numpy as np

from dpkit._validation import check_integer, check_open_unit, check_positive
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import INTERCEPT, Dataset, is_data_file, load_dataset, train_test_split
from dpkit.algorithms.substrate.evaluation import accuracy, majority_accuracy
from dpkit.algorithms.substrate.graphs import Graph, make_graph
from dpkit.algorithms.substrate.partition import partition
from dpkit.algorithms.substrate.prior_fallback import choose, with_fallback
from dpkit.algorithms.substrate.private_quantiles import check_quantile, estimate_quantile_ranges
from dpkit.algorithms.substrate.private_ranges import scale_from_training_rows
from dpkit.algorithms.registry import get_algorithm
from dpkit.algorithms.substrate.defaults import MIN_ROWS_PER_AGENT, default_agents, noise_warning, small_agents_warning
from dpkit.algorithms.substrate.result import TrainingResult, account
from dpkit.algorithms.substrate.spec import AlgorithmSpec

__all__ = ["train", "prepare", "Setting", "MAX_ITERATIONS", "MIN_ROWS_PER_AGENT", "FLOAT_NOTE",
           "small_agents_warning"]

FLOAT_NOTE = ("not private as executed: some releases were drawn by continuous floating-point samplers or rest on "
              "a proof in exact arithmetic, so the epsilon holds for idealised reals and the released doubles can "
              "reveal more (Mironov 2012; docs/audit.md, 'Floating point as executed')")
"""The note of a run whose ledger holds a release that is not private as executed; the ledger's own
notes (:attr:`~dpkit.mechanisms.ledger.PrivacyLedger.not_as_executed`) follow it, one per mechanism."""

MAX_ITERATIONS = 1_000_000
"""The most rounds a run may plan: a run records its per-round history, and beyond 10⁶ rounds it
would hold gigabytes and run for days, so a larger ``iterations`` is refused up front."""


def train(
    name: str,
    data: Dataset | str,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    agents: int | None = None,
    iterations: int | None = None,
    seed: int = 0,
    n_train: int | None = None,
    graph: str | None = None,
    edges: int | None = None,
    variant: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    clip_quantile: float | None = None,
    **options: Any,
) -> TrainingResult:
    """Train algorithm ``name`` on ``data`` and score it on the held-out rows.

    Parameters
    ----------
    name
        A name of :data:`dpkit.algorithms.registry.ALGORITHMS` (``"dp-logreg"``, ``"admm"``, ...).
    data
        A :class:`~dpkit.algorithms.substrate.data.Dataset`, or a name for
        :func:`~dpkit.algorithms.substrate.data.load_dataset` (``"adult"``, ``"builtin"``, a path, ...).
        A file path is read as ``dpkit train --data FILE`` reads it: its columns are scaled by
        ranges estimated privately from the training rows (``private_scaling``).
    epsilon, delta
        The run's total budget for one record (private algorithms; ``delta`` defaults to the
        algorithm's). A non-private algorithm takes neither.
    agents
        Number of agents (default: :func:`~dpkit.algorithms.substrate.defaults.default_agents`, the algorithm's
        number capped so that every agent holds ≥ ``MIN_ROWS_PER_AGENT`` rows; centralised algorithms take 1).
    iterations
        Planned rounds (default: the algorithm's documented rule).
    seed
        Seeds the split, partition, graph and noise (module docstring).
    n_train
        Training rows (default: the algorithm's, at most 80 % of the rows).
    graph, edges
        Communication graph (``"random"``, the default, ``"ring"``, ``"complete"``, ``"star"``)
        and the random graph's edge count; graph-topology algorithms only (the others refuse them).
    variant
        One of the algorithm's variants (default: its first, ``"corrected"`` for the private ones).
    progress
        ``progress(t, T)`` after each round.
    clip_quantile
        q in (0.5, 1) for data scaled privately (``private_scaling``): each column is clipped at
        private estimates of its (1 − q)- and q-quantiles
        (:mod:`~dpkit.algorithms.substrate.private_quantiles`, charged to ε) instead of the private
        ranges; for heavy-tailed columns. None (default): the private ranges.
    options
        Algorithm options (``SPEC.options``).

    Raises
    ------
    ValueError, TypeError
        For an unknown algorithm, variant or option, or an invalid parameter (the message names it).
    """
    spec = get_algorithm(name)
    unknown = sorted(set(options) - set(spec.options))
    if unknown:
        raise ValueError(f"options {unknown} are not accepted by {name}; accepted: {list(spec.options)}")
    if isinstance(data, str):
        data = load_dataset(data, rng=seed, private_scaling=is_data_file(data))
    if not isinstance(data, Dataset):
        raise TypeError(f"data must be a Dataset or a dataset name, got {type(data).__name__}")
    if clip_quantile is not None:
        clip_quantile = check_quantile("clip_quantile", clip_quantile)
    if clip_quantile is not None and not data.private_scaling:
        raise ValueError(f"clip_quantile applies to data scaled from its training rows (a file read without public "
                         f"bounds: private_scaling); {data.name!r} is already scaled, got clip_quantile={clip_quantile!r}")
    seed = check_integer("seed", seed, minimum=0)
    variant = spec.variants[0] if variant is None else variant
    if variant not in spec.variants:
        raise ValueError(f"variant must be one of {spec.variants} for {name}, got variant={variant!r}")
    budget = _budget(spec.name, spec.private, epsilon, delta, spec.delta)
    if agents is None:
        agents = default_agents(spec, _default_n_train(spec, data) if n_train is None else n_train)
    agents = check_integer("agents", agents, minimum=1)
    if spec.topology == "central" and agents != 1:
        raise ValueError(f"{name} is centralised: agents must be 1, got agents={agents}")
    if iterations is not None:
        iterations = check_integer("iterations", iterations, minimum=1, maximum=MAX_ITERATIONS)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable or None, got progress={progress!r}")
    if spec.topology == "graph":
        if agents < 2:
            raise ValueError(f"{name} runs on a communication graph: agents must be an integer >= 2, got agents={agents}")
        if edges is not None:
            edges = check_integer("edges", edges, minimum=agents - 1, maximum=agents * (agents - 1) // 2)
    for key, value in (("graph", graph), ("edges", edges)):
        if spec.topology != "graph" and value is not None:
            raise ValueError(f"{key} applies to graph-topology algorithms only; {name} is {spec.topology}, "
                             f"got {key}={value!r}")
    setting = prepare(spec, data, agents=agents, seed=seed, n_train=n_train, graph=graph or "random", edges=edges)
    parts, test, network = setting.parts, setting.test, setting.graph
    start = time.perf_counter()
    scaling = None
    if data.private_scaling:
        estimate = None if clip_quantile is None else functools.partial(estimate_quantile_ranges, quantile=clip_quantile)
        scaling = scale_from_training_rows(parts, test, budget, rng=setting.rng, estimate=estimate)
        parts, test, budget = scaling.parts, scaling.test, scaling.budget
    fallback = budget is not None and variant == "corrected" and INTERCEPT in data.feature_names
    if fallback:
        budget = with_fallback(budget)
    result = spec.runner(parts, test, network, budget=budget, iterations=iterations, variant=variant,
                         rng=setting.rng, progress=progress, **options)
    choice = None
    if fallback:
        choice = choose(result.model, parts, budget, result.ledger, rng=setting.rng)
        result = dataclasses.replace(result, model=choice.model, accuracy=accuracy(choice.model, test),
                                     guarantee=account(result.ledger, budget.delta))
    seconds = time.perf_counter() - start
    config = dict(result.config)
    config.update({
        "seconds_loop": result.seconds,
        "seed": seed, "data": data.name, "n_train": setting.n_train, "n_test": test.n, "dimension": data.d,
        "agents": agents,
        "epsilon_target": None if budget is None else budget.epsilon,
        "delta_target": None if budget is None else budget.delta,
        "majority_accuracy": majority_accuracy(test),
    })
    if choice is not None:
        config["fallback"] = choice.to_dict()
    if scaling is not None:
        config["scaling"] = scaling.how
        config["column_ranges"] = {"low": scaling.low.tolist(), "high": scaling.high.tolist()}
    if network is not None:
        config["graph"] = network.to_dict()
    notes = result.notes
    sizes = [p.n for p in parts]
    for warning in (small_agents_warning(sizes, spec.private), noise_warning(sizes, data.d, epsilon if spec.private else None)):
        if warning:
            notes = notes + (warning,)
    if choice is not None and choice.chosen != "trained model":
        notes = notes + (f"the returned model is the {choice.chosen} of the class-prior fallback; the history "
                         "scores the trained models it replaced",)
    if result.ledger.not_as_executed:
        notes = notes + (FLOAT_NOTE, *result.ledger.not_as_executed)
    return dataclasses.replace(result, config=config, seconds=seconds, notes=notes)


@dataclasses.dataclass(frozen=True)
class Setting:
    """The seeded setting of a run: the agents' training sets, the test set, the communication graph
    (None unless the topology is ``"graph"``), the generator of the algorithm's noise and ``n_train``."""

    parts: list[Dataset]
    test: Dataset
    graph: Graph | None
    rng: np.random.Generator
    n_train: int


def prepare(spec: AlgorithmSpec, data: Dataset, *, agents: int | None = None, seed: int = 0,
            n_train: int | None = None, graph: str = "random", edges: int | None = None) -> Setting:
    """Split ``data`` (``n_train`` rows, default the algorithm's size capped at 80 %), partition the
    training rows equally over ``agents`` and build the graph, all seeded by ``seed``:
    ``SeedSequence(seed).spawn(4)`` seeds the split, the partition, the graph and the noise, so every
    caller that prepares the same (spec, data, agents, seed) gets the same setting."""
    if agents is None:
        agents = default_agents(spec, _default_n_train(spec, data) if n_train is None else n_train)
    agents = check_integer("agents", agents, minimum=1)
    seed = check_integer("seed", seed, minimum=0)
    if n_train is None:
        n_train = _default_n_train(spec, data)
        if n_train < agents:
            raise ValueError(f"data {data.name!r} has {data.n} rows: 80 % of them ({n_train}) is fewer than one "
                             f"training row per agent (agents={agents}); use more data or fewer agents")
    elif n_train < agents:
        check_integer("n_train", n_train, minimum=1)
        raise ValueError(f"n_train={n_train} is fewer than one training row per agent (agents={agents}); "
                         f"give n_train >= {agents} or fewer agents")
    seeds = np.random.SeedSequence(seed).spawn(4)
    train_rows, test = train_test_split(data, n_train, np.random.default_rng(seeds[0]))
    parts = partition(train_rows, agents, rng=np.random.default_rng(seeds[1]))
    network = make_graph(graph, agents, np.random.default_rng(seeds[2]), edges) if spec.topology == "graph" else None
    return Setting(parts, test, network, np.random.default_rng(seeds[3]), n_train)


def _default_n_train(spec: AlgorithmSpec, data: Dataset) -> int:
    """The algorithm's training-set size, at most 80 % of the rows."""
    return min(spec.n_train, int(0.8 * data.n))


def _budget(name: str, private: bool, epsilon: float | None, delta: float | None, default_delta: float) -> Budget | None:
    if not private:
        for key, value in (("epsilon", epsilon), ("delta", delta)):
            if value is not None:
                raise ValueError(f"{name} is not private: it takes no {key}, got {key}={value}")
        return None
    if epsilon is None:
        raise ValueError(f"{name} is private: give epsilon (the run's total budget)")
    delta = default_delta if delta is None else delta
    return Budget(check_positive("epsilon", epsilon), check_open_unit("delta", delta))
