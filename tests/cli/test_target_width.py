"""``--target-width W`` on ``dpkit epsilon`` and ``dpkit calibrate``: the PLD's certified interval
[lower, upper] is at most W wide, printed, and the upper end is within W of an exact reference.

Reference for k-ary randomized response (Kairouz, Oh & Viswanath 2015, Thm 2.1): with
r = 1/(e^ε₀ + k − 1) the privacy loss of one use is +ε₀ (probability e^ε₀·r), −ε₀ (r) and 0
((k − 2)·r); after n uses it is ε₀(a − b) for the multinomial counts (a, b), and
δ(ε) = Σ P(a, b)·(1 − e^{ε − ε₀(a−b)})₊ (the hockey-stick divergence), summed exactly in 50-digit
mpmath; the exact ε at δ is found by bisection on this decreasing function.

Reference for Laplace(b = 1) composed k times: tests/data/laplace_composition_references.json, the
closed-form δ(ε) of the k-fold Laplace privacy loss (atoms ±1 and an Irwin–Hall sum of the continuous
parts) solved in 50-digit mpmath by scripts/precompute/laplace_composition_references.py.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import mpmath
import pytest

from dpkit.cli.main import main
from dpkit.commands.errors import EXIT_OK, EXIT_USAGE


def run_json(argv: list[str]) -> dict:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([*argv, "--json"])
    assert status == EXIT_OK, err.getvalue()
    return json.loads(out.getvalue())


def exact_rr_epsilon(epsilon0: float, k: int, n: int, delta: float) -> mpmath.mpf:
    with mpmath.workdps(50):
        e0 = mpmath.mpf(epsilon0)
        r = 1 / (mpmath.e ** e0 + k - 1)
        p_up, p_down, p_zero = mpmath.e ** e0 * r, r, (k - 2) * r
        atoms: dict[int, mpmath.mpf] = {}
        for a in range(n + 1):
            for b in range(n - a + 1):
                weight = (mpmath.factorial(n) / (mpmath.factorial(a) * mpmath.factorial(b) * mpmath.factorial(n - a - b))
                          * p_up ** a * p_down ** b * p_zero ** (n - a - b))
                atoms[a - b] = atoms.get(a - b, 0) + weight

        def hockey_stick(eps: mpmath.mpf) -> mpmath.mpf:
            return mpmath.fsum(w * (1 - mpmath.e ** (eps - e0 * m)) for m, w in atoms.items() if e0 * m > eps)

        low, high = mpmath.mpf(0), e0 * n
        for _ in range(200):
            mid = (low + high) / 2
            low, high = (mid, high) if hockey_stick(mid) > delta else (low, mid)
        return high


@pytest.mark.parametrize("k", [2, 4])
def test_pld_with_target_width_is_within_it_of_the_exact_randomized_response_epsilon(k):
    width = 1e-6
    result = run_json(["epsilon", "--mechanism", "randomized-response", "--epsilon0", "1", "--k", str(k),
                       "--count", "100", "--delta", "1e-5", "--accountant", "pld", "--target-width", str(width)])
    exact = exact_rr_epsilon(1.0, k, 100, 1e-5)
    assert exact <= result["epsilon"] <= exact + width
    assert result["epsilon_lower"] <= exact
    assert result["certified_width"] <= width


@pytest.mark.parametrize("count", [10, 20])
def test_laplace_interval_is_certified_to_the_width_asked(count):
    # Laplace with b = 1 is 1-DP per use: basic composition (Dwork & Roth 2014, Thm 3.16) bounds it by count
    width = 1e-6
    result = run_json(["epsilon", "--mechanism", "laplace", "--scale", "1", "--count", str(count), "--delta", "1e-5",
                       "--accountant", "pld", "--target-width", str(width)])
    assert result["epsilon"] - result["epsilon_lower"] <= width == result["dpkit"]["config"]["target_width"]
    assert 0 < result["epsilon_lower"] <= result["epsilon"] <= count


def test_text_output_prints_the_interval_with_the_digits_the_width_needs():
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["epsilon", "--mechanism", "laplace", "--scale", "1", "--count", "10", "--delta", "1e-5",
                     "--accountant", "pld", "--target-width", "1e-6"]) == EXIT_OK
    line = next(line for line in out.getvalue().splitlines() if "(target 1e-06)" in line)
    lower, upper = (float(x) for x in line.split("[")[1].split("]")[0].split(","))
    assert 0 < upper - lower <= 1e-6


def test_calibrate_takes_target_width_and_other_accountants_refuse_it():
    result = run_json(["calibrate", "--mechanism", "laplace", "--epsilon", "1", "--delta", "1e-5", "--count", "10",
                       "--accountant", "pld", "--target-width", "1e-4"])
    assert result["certified_width"] <= 1e-4 and result["epsilon"] <= 1
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["epsilon", "--sigma", "1", "--delta", "1e-5", "--target-width", "1e-4"]) == EXIT_USAGE
        assert main(["epsilon", "--sigma", "1", "--delta", "1e-5", "--accountant", "pld",
                     "--target-width", "0"]) == EXIT_USAGE
    assert "--target-width" in err.getvalue() and err.getvalue().count("\n") == 2


@pytest.mark.slow
def test_a_million_dpsgd_steps_reach_the_width_asked():
    result = run_json(["epsilon", "--sigma", "1.1", "--sampling", "poisson", "--rate", "0.01", "--count", "1e6",
                       "--delta", "1e-5", "--accountant", "pld", "--target-width", "1e-2"])
    assert result["certified_width"] <= 1e-2


def exact_gaussian_epsilon(mu: float, delta: float) -> mpmath.mpf:
    """ε of a μ-GDP pair at δ: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle & Wang 2018, Thm 8;
    Dong, Roth & Su 2022, Cor. 2.13), decreasing in ε, solved by 200 bisection steps in 50 digits."""
    with mpmath.workdps(50):
        m = mpmath.mpf(mu)

        def hockey_stick(eps: mpmath.mpf) -> mpmath.mpf:
            return mpmath.ncdf(-eps / m + m / 2) - mpmath.e ** eps * mpmath.ncdf(-eps / m - m / 2)

        low, high = mpmath.mpf(0), mpmath.mpf(100)
        for _ in range(200):
            mid = (low + high) / 2
            low, high = (mid, high) if hockey_stick(mid) > delta else (low, mid)
        return high


def test_gaussian_calibration_refines_the_merged_gaussian_to_the_width_asked():
    # 100 Gaussians of σ compose exactly into one of μ = √100/σ (Dong, Roth & Su 2022, Cor. 3.3)
    width = 1e-4
    result = run_json(["calibrate", "--mechanism", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--count", "100",
                       "--accountant", "pld", "--target-width", str(width)])
    exact = exact_gaussian_epsilon(10.0 / result["sigma"], 1e-5)
    assert result["certified_width"] <= width
    assert result["epsilon_lower"] <= exact <= result["epsilon"] <= 1.0


LAPLACE_REFS = json.loads((Path(__file__).resolve().parents[1] / "data" / "laplace_composition_references.json")
                          .read_text())["laplace"]


@pytest.mark.parametrize("case", LAPLACE_REFS, ids=lambda c: f"count{c['count']}-delta{c['delta']:g}")
def test_laplace_upper_end_is_within_the_width_asked_of_the_exact_epsilon(case):
    width = 1e-6
    result = run_json(["epsilon", "--mechanism", "laplace", "--scale", str(case["scale"]), "--count",
                       str(case["count"]), "--delta", str(case["delta"]), "--accountant", "pld",
                       "--target-width", str(width)])
    exact = mpmath.mpf(case["epsilon"])
    assert result["epsilon_lower"] <= exact <= result["epsilon"] <= exact + width
