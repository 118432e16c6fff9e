"""What a run returns is covered by its ε or labelled as a diagnostic.

Replay argument (Dwork & Roth 2014, Prop. 2.1, post-processing): a value computed only from
what the mechanisms released (and from public inputs: sizes, graph, test rows, seed) is the same
function of those releases on every training set. So if a second run on a different training set
is fed the first run's releases bit for bit, every released number must come out identical; a
number that changes was computed on the private rows without noise and must sit in the
``diagnostics`` part, labelled as not covered by ε.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest

from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import Dataset, make_synthetic
from dpkit.algorithms.substrate.evaluation import DIAGNOSTIC_LABEL
from dpkit.algorithms.registry import ALGORITHMS
from dpkit.algorithms.training import prepare
from dpkit.mechanisms.base import Mechanism
from dpkit.mechanisms.sparse_vector import GatedReleaseRun

# Algorithms whose mechanisms release the published value itself. dvp-admm's mechanisms draw the
# noise b_p(t) alone and the algorithm adds it to the primal, so its releases cannot be replayed.
REPLAYABLE = ("dp-logreg", "pp-admm", "ipp-admm", "dp-admm", "admm-pvp", "hetero-admm", "a-ddp")
SMALL = {"dp-logreg": 20, "pp-admm": 4, "ipp-admm": 6, "dp-admm": 6, "admm-pvp": 6, "hetero-admm": 4, "a-ddp": None}


@contextlib.contextmanager
def recording(tape: list, replay: bool):
    """Patch every release path: record its outputs, or (``replay``) return the recorded ones in order."""
    patches = [(Mechanism, "release"), (Mechanism, "release_each"), (GatedReleaseRun, "step"),
               (GatedReleaseRun, "release_now")]
    originals = [getattr(owner, name) for owner, name in patches]
    cursor = iter(tape) if replay else None

    def wrap(original):
        def patched(*args, **kwargs):
            if replay and original is GatedReleaseRun.release_now:
                # no ledger entry of its own (the run's is made when it opens); and the replayed run's
                # own count of ⊤ answers follows the flipped data, so it may already be at its cut-off
                return next(cursor)
            out = original(*args, **kwargs)  # the draw and the ledger entry happen as usual
            if replay:
                return next(cursor)
            tape.append(None if out is None else np.array(out, copy=True))
            return out
        return patched

    for (owner, name), original in zip(patches, originals):
        setattr(owner, name, wrap(original))
    try:
        yield
    finally:
        for (owner, name), original in zip(patches, originals):
            setattr(owner, name, original)


def leaves(value, path=""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, f"{path}/{key}")
    elif isinstance(value, (list, tuple)):
        for k, item in enumerate(value):
            yield from leaves(item, f"{path}/{k}")
    else:
        yield path, value


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def flipped(part: Dataset) -> Dataset:
    return Dataset(part.X, -part.y, part.name, part.feature_names)


def run(spec, parts, setting, tape, replay):
    agents = len(parts)
    with recording(tape, replay):
        return spec.runner(parts, setting.test, setting.graph, budget=Budget(1.0, 1e-5), iterations=SMALL[spec.name],
                           variant=spec.variants[0], rng=np.random.default_rng(5), progress=None)


@pytest.mark.parametrize("name", REPLAYABLE)
def test_release_is_a_function_of_the_releases(name):
    spec = ALGORITHMS[name]
    agents = 1 if spec.topology == "central" else 4
    data = make_synthetic(1600, 4, rng=1)
    setting = prepare(spec, data, agents=agents, seed=3, n_train=1200)
    tape: list = []
    first = run(spec, setting.parts, setting, tape, replay=False)
    second = run(spec, [flipped(p) for p in setting.parts], setting, tape, replay=True)
    a, b = first.to_dict(), second.to_dict()
    assert "diagnostics" not in a
    differing = [path for (path, x), (_, y) in zip(leaves(a), leaves(b)) if not same(x, y)]
    assert [p for p in differing if p != "/seconds"] == []
    # the check can fail: the diagnostics, computed on the private rows, do change
    da, db = first.to_dict(diagnostics=True)["diagnostics"], second.to_dict(diagnostics=True)["diagnostics"]
    assert da["label"] == DIAGNOSTIC_LABEL
    assert da["history"]["empirical_risk"] != db["history"]["empirical_risk"]


def test_history_holds_published_and_test_values_only():
    spec = ALGORITHMS["pp-admm"]
    setting = prepare(spec, make_synthetic(800, 3, rng=0), agents=3, seed=0, n_train=600)
    result = run(spec, setting.parts, setting, [], replay=False)
    assert set(result.history) == {"iteration", "consensus_gap", "test_accuracy", "test_risk"}
    assert set(result.diagnostics["history"]) == {"iteration", "empirical_risk", "dual_sum"}
    assert "max_grad_norm" in result.diagnostics and "max_grad_norm" not in result.config
