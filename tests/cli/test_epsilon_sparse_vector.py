"""``dpkit epsilon`` / ``dpkit calibrate`` with ``--mechanism sparse-vector`` (Zhu & Wang 2020),
checked against the library's accountants on the events the options describe."""

from __future__ import annotations

import math

import pytest

from dpkit.accounting.calibration import accountant_factory
from dpkit.accounting.events import GaussianSparseVectorEvent, SparseVectorEvent, ZCDPEvent, repeat
from dpkit.accounting.rdp_sparse_vector import rdp_gaussian_sparse_vector
from dpkit.commands.runner import CommandError, run_json


def library_epsilon(accountant: str, event, delta: float) -> float:
    return accountant_factory(accountant, "add-remove")().compose(event).get_epsilon(delta).epsilon


def test_laplace_rdp_matches_library_event():
    out = run_json("epsilon --mechanism sparse-vector --noise laplace --scale 10 --cutoff 3 --max-queries 100 "
                   "--count 20 --delta 1e-5 --accountant rdp".split())
    # Lap(10Δ) on threshold and queries: ε₁ = 1/10, ε₂ = 2·3/10 (a ⊤ answer moves by up to 2Δ)
    event = repeat(SparseVectorEvent(0.1, 0.6, 3, max_queries=100), 20)
    assert out["epsilon"] == library_epsilon("rdp", event, 1e-5)
    assert out["event"] == event.to_dict() and out["accountant"] == "rdp"
    # never above basic composition of the pure (ε₁ + ε₂) per run
    assert out["epsilon"] <= 20 * 0.7


def test_laplace_default_noise_monotonic_and_pure_accountants():
    out = run_json("epsilon --mechanism sparse-vector --scale 4 --monotonic --delta 1e-6 --accountant pld".split())
    # monotonic queries: ε₁ + ε₂ = 1/4 + 1/4; the PLD's grid accounts one run as that pure ε (its
    # certified interval holds the binary RR value), and reports the RDP route where that is tighter
    assert out["event"] == SparseVectorEvent(0.25, 0.25, 1).to_dict()
    exact = math.log(math.exp(0.5) - 1e-6 * (1 + math.exp(0.5)))  # binary RR at ε = 0.5, δ = 1e-6
    interval = next(note for note in out["notes"] if note.startswith("certified interval"))
    low, high = (float(end) for end in interval.split("[")[1].split("]")[0].split(", "))
    assert low - 1e-8 <= exact <= high + 1e-8 and high <= 0.5 + 1e-8  # (the note prints nine digits)
    assert out["epsilon"] <= high and any(note.startswith("route: ") for note in out["notes"])
    approx = run_json("epsilon --mechanism sparse-vector --scale 4 --cutoff 2 --delta 1e-6 --accountant approx".split())
    exact = math.log(math.exp(1.25) - 1e-6 * (1 + math.exp(1.25)))  # ε₁ + ε₂ = 1/4 + 2·2/4, binary RR
    assert exact <= approx["epsilon"] <= 1.25 + 1e-9


def test_gaussian_rdp_matches_library_and_closed_form():
    out = run_json("epsilon --mechanism sparse-vector --noise gaussian --sigma 30 --cutoff 2 --max-queries 50 "
                   "--count 5 --delta 1e-5 --accountant rdp".split())
    event = repeat(GaussianSparseVectorEvent(30.0, 30.0, 50, 2), 5)
    assert out["epsilon"] == library_epsilon("rdp", event, 1e-5)
    # the reported order and ε satisfy the improved conversion of the closed-form curve
    a = out["order"]
    curve = 5 * (a / (2 * 900.0) + min(math.log(math.comb(50, 2)) / (a - 1) + 2 * a * 4 / (2 * 900.0),
                                       50 * a * 4 / (2 * 900.0)))
    assert 5 * rdp_gaussian_sparse_vector(a, 30.0, 30.0, 2, 50) == pytest.approx(curve, rel=1e-12)
    expected = curve + math.log1p(-1 / a) - (math.log(1e-5) + math.log(a)) / (a - 1)
    assert out["epsilon"] == pytest.approx(expected, rel=1e-9)


def test_gaussian_zcdp_uses_every_query():
    out = run_json("epsilon --mechanism sparse-vector --noise gaussian --sigma 20 --max-queries 10 --delta 1e-5 "
                   "--accountant zcdp".split())
    rho = 1 / (2 * 400.0) + 10 * 4 / (2 * 400.0)  # threshold shift Δ, ten query shifts 2Δ
    assert out["epsilon"] == library_epsilon("zcdp", ZCDPEvent(rho), 1e-5)
    assert out["epsilon"] <= rho + 2 * math.sqrt(rho * math.log(1e5))


@pytest.mark.parametrize("noise,option", [("laplace", "scale"), ("gaussian", "sigma")])
def test_calibrate_round_trip(noise, option):
    base = f"--mechanism sparse-vector --noise {noise} --cutoff 2 --max-queries 40 --count 10 --delta 1e-5 --accountant rdp"
    cal = run_json(f"calibrate --epsilon 2 {base}".split())
    value = cal[option]
    assert cal["parameter_name"] == option
    at = run_json(f"epsilon --{option} {value!r} {base}".split())
    assert at["epsilon"] <= 2.0
    below = run_json(f"epsilon --{option} {value * (1 - 1e-3)!r} {base}".split())
    assert below["epsilon"] > 2.0  # calibration returns (nearly) the least noise that meets the target


@pytest.mark.parametrize("line,needle", [
    ("epsilon --mechanism sparse-vector --noise laplace --sigma 3 --delta 1e-5", "--sigma does not apply to --noise laplace"),
    ("epsilon --mechanism sparse-vector --noise gaussian --scale 3 --max-queries 5 --delta 1e-5",
     "--scale does not apply to --noise gaussian"),
    ("epsilon --mechanism sparse-vector --noise gaussian --sigma 3 --delta 1e-5", "--max-queries"),
    ("epsilon --mechanism sparse-vector --scale 3 --cutoff 0 --delta 1e-5", "--cutoff"),
    ("epsilon --mechanism sparse-vector --scale 3 --max-queries 0 --delta 1e-5", "--max-queries"),
    ("epsilon --mechanism sparse-vector --scale -3 --delta 1e-5", "--scale"),
    ("epsilon --mechanism sparse-vector --scale 3 --sensitivity 2 --delta 1e-5", "--sensitivity"),
    ("epsilon --mechanism sparse-vector --scale 3 --sampling poisson --rate 0.1 --delta 1e-5", "--sampling"),
    ("epsilon --mechanism gaussian --sigma 3 --cutoff 2 --delta 1e-5", "--cutoff applies to --mechanism sparse-vector"),
    ("epsilon --mechanism laplace --scale 3 --noise gaussian --delta 1e-5", "--noise applies to --mechanism sparse-vector"),
    ("epsilon --mechanism sparse-vector --noise gaussian --sigma 3 --max-queries 5 --delta 1e-5 --accountant pld",
     "PLD"),
])
def test_bad_combinations_give_one_line_errors(line, needle):
    with pytest.raises(CommandError) as error:
        run_json(line.split())
    message = str(error.value)
    assert needle in message and "\n" not in message.strip()
