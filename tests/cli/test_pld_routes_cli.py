"""``dpkit epsilon --accountant pld --json`` is finite and monotone in δ at the edges where the PLD grid
alone gave ∞ or a loose value, and names the route that gave each number."""

from __future__ import annotations

import json
import math

import mpmath as mp
import pytest

from dpkit.accounting.events import GaussianEvent, TreeAggregationEvent
from dpkit.accounting.registry import make_accountant
from dpkit.cli.main import main

ROUNDING = 1e-323
"""Two outward roundings (GDP's closed form, then the PLD's exit) may lift a certified 0 to two subnormal ulps."""


def run_json(capsys, line: str) -> dict:
    code = main(line.split())
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def gaussian_delta(mu: mp.mpf, epsilon: float) -> mp.mpf:
    """δ(ε) of μ-GDP (Dong, Roth & Su 2022, Cor. 2.13) at 50 digits."""
    with mp.workdps(50):
        e = mp.mpf(epsilon)
        return mp.ncdf(-e / mu + mu / 2) - mp.exp(e) * mp.ncdf(-e / mu - mu / 2)


def test_tree_aggregation_million_uses_is_finite_and_monotone(capsys):
    """σ = 1e10 over 2²⁰ steps (21 nodes), 10⁶ times: one Gaussian of μ = √(21·10⁶)/1e10."""
    mu = mp.sqrt(21 * 10**6) / mp.mpf(1e10)
    event = TreeAggregationEvent(1e10, (2**20,))
    outs = []
    for delta in (1e-300, 1e-10, 1e-5):
        out = run_json(capsys, f"epsilon --mechanism tree-aggregation --sigma 1e10 --steps 1048576 --count 1000000 "
                               f"--delta {delta} --accountant pld --json")
        assert math.isfinite(out["epsilon"]) and gaussian_delta(mu, out["epsilon"]) <= delta
        exact = make_accountant("gdp").compose(event, 10**6).get_epsilon(delta).epsilon
        assert out["epsilon"] <= exact * (1 + 1e-9) + ROUNDING
        assert any(note.startswith("route: ") for note in out["notes"])
        outs.append(out)
    assert outs[0]["epsilon"] >= outs[1]["epsilon"] >= outs[2]["epsilon"]


@pytest.mark.parametrize("sigma", ["1e100", "1e160", "1e300"])
def test_almost_noiseless_gaussian_is_finite(capsys, sigma):
    out = run_json(capsys, f"epsilon --sigma {sigma} --delta 1e-5 --accountant pld --json")
    exact = make_accountant("gdp").compose(GaussianEvent(float(sigma))).get_epsilon(1e-5).epsilon
    assert out["epsilon"] <= exact * (1 + 1e-9) + ROUNDING < math.inf
    assert any(note.startswith("route: gdp") for note in out["notes"])
