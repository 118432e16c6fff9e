"""Clip points at private quantiles, charged to the run (substrate/private_quantiles.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from dpkit.accounting.events import ExponentialMechanismEvent, GaussianEvent
from dpkit.accounting.gdp import gdp_mu_for
from dpkit.algorithms import train
from dpkit.algorithms.substrate import private_quantiles as Q
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import Dataset

FINITE = st.floats(-1e9, 1e9, allow_nan=False, allow_infinity=False)


@settings(max_examples=80, deadline=None)
@given(arrays(float, st.integers(1, 12), elements=FINITE), st.integers(0, 11), FINITE, st.integers(0, 13))
def test_one_row_moves_every_score_by_at_most_one(column, row, replacement, target):
    """The sensitivity the draws are charged at (replace-one): the scores are integers and replacing a
    row moves each by at most 1; removing one moves the count by 1 and the target by at most 1."""
    grid = Q.candidate_grid()
    scores = Q.rank_scores(column, grid, target)
    assert np.array_equal(scores, np.round(scores))
    other = column.copy()
    other[row % column.size] = replacement
    assert np.max(np.abs(Q.rank_scores(other, grid, target) - scores)) <= 1.0
    if column.size > 1:
        shorter = np.delete(column, row % column.size)
        for moved in (target - 1, target):
            assert np.max(np.abs(Q.rank_scores(shorter, grid, moved) - scores)) <= 2.0


def test_draws_are_recorded_and_charged_at_their_share():
    """The ledger the budget carries holds stage 1's Gaussian histogram and 2d exponential-mechanism
    draws at eps0 = mu·sqrt(2·share/d), in that order; a budget already carrying a release is refused."""
    gen = np.random.default_rng(3)
    X = np.column_stack([np.exp(gen.normal(0.0, 1.5, 3000)), gen.uniform(17, 90, 3000), gen.integers(0, 2, 3000)])
    budget = Budget(1.0, 1e-5)
    clip = Q.estimate_quantile_ranges(X, budget, quantile=0.95, rng=0)
    events = [event for event, count in clip.budget.spent_before.entries(0) for _ in range(count)]
    assert isinstance(events[0], GaussianEvent) and len(events) == 1 + 2 * X.shape[1]
    eps0 = gdp_mu_for(1.0, 1e-5) * math.sqrt(2 * Q.QUANTILE_SHARE / X.shape[1])
    assert all(e == ExponentialMechanismEvent(epsilon=eps0) for e in events[1:])
    assert np.all(clip.low < clip.high)
    with pytest.raises(ValueError, match="already carries"):
        Q.estimate_quantile_ranges(X, clip.budget, quantile=0.95, rng=0)


def test_clip_point_is_within_the_exponential_mechanisms_rank_error():
    """Utility of the exponential mechanism (Dwork & Roth 2014, Thm 3.11): the chosen candidate's score is
    below the best candidate's by more than (2Δ/eps0)(ln|C| + t) with probability at most e^-t. With
    t = ln(1e6) over 20 seeds of draws, a failure here has probability below 1e-4."""
    gen = np.random.default_rng(7)
    income = np.exp(gen.normal(10.0, 1.0, 4000))[:, None]
    grid = Q.candidate_grid()
    for seed in range(20):
        clip = Q.estimate_quantile_ranges(income, Budget(1.0, 1e-5), quantile=0.95, rng=seed)
        eps0 = clip.epsilon_each
        target = math.ceil(0.95 * income.shape[0])
        scores = Q.rank_scores(income[:, 0], grid, target)  # the candidates within stage 1's range are a subset
        slack = (2.0 / eps0) * (math.log(grid.size) + math.log(1e6))
        chosen = Q.rank_scores(income[:, 0], np.array([clip.high[0]]), target)[0]
        assert chosen >= scores.max() - slack
        assert clip.high[0] < income.max()  # the heavy tail is clipped, not kept


@pytest.mark.parametrize("quantile", [0.5, 0.2, 1.0, 1.5, float("nan")])
def test_a_quantile_outside_the_open_interval_is_refused(quantile):
    with pytest.raises(ValueError, match="quantile"):
        Q.check_quantile("quantile", quantile)


def test_train_clips_a_privately_scaled_table_and_refuses_a_scaled_one():
    """train(clip_quantile=q) on data without public ranges: the run's certified epsilon covers the draws
    (within the budget), the config says how the columns were scaled; on scaled data it is refused."""
    gen = np.random.default_rng(1)
    n = 3000
    X = np.column_stack([np.exp(gen.normal(0.0, 1.5, n)), gen.normal(40, 10, n), np.ones(n)])
    y = np.where(np.log(X[:, 0]) + gen.normal(0, 1, n) > 0, 1.0, -1.0)
    raw = Dataset(X, y, "lognormal", ("income", "age", "bias"), private_scaling=True)
    result = train("dp-logreg", raw, epsilon=1.0, seed=0, clip_quantile=0.95)
    assert result.epsilon <= 1.0
    assert "quantiles" in result.config["scaling"]
    assert result.ledger.draws(0) > 1 + 2 * 2
    with pytest.raises(ValueError, match="clip_quantile"):
        train("dp-logreg", Dataset(X / np.abs(X).max(axis=0), y, "scaled", ("income", "age", "bias")), epsilon=1.0,
              clip_quantile=0.95)


def test_dpkit_train_takes_clip_quantile_and_refuses_a_bad_one(tmp_path, capsys):
    """``--clip-quantile`` reaches train(): the run's config says how the columns were clipped and its ε
    stays within the budget; a level outside (0.5, 1), or with --public-scaling, exits 2 with one line."""
    import json

    from dpkit.cli.main import main

    gen = np.random.default_rng(2)
    income = np.exp(gen.normal(0.0, 1.5, 1500))
    label = (np.log(income) + gen.normal(0, 1, 1500) > 0).astype(int)
    path = tmp_path / "incomes.csv"
    path.write_text("income,age,y\n" + "".join(f"{a:.6g},{b:.3g},{c}\n" for a, b, c in
                                                zip(income, gen.normal(40, 10, 1500), label)))
    base = ["train", "--algorithm", "dp-logreg", "--data", str(path), "--label", "y", "--epsilon", "1"]
    assert main([*base, "--clip-quantile", "0.95", "--json", "--quiet"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert "quantiles" in summary["config"]["scaling"] and summary["guarantee"]["epsilon"] <= 1.0
    for extra in (["--clip-quantile", "0.3"], ["--clip-quantile", "0.95", "--public-scaling"]):
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert "--clip-quantile" in err and len(err.splitlines()) == 1
