"""Audits of the seed papers' privacy claims with :func:`dpkit.audit.audit` (issue 7).

Every scenario is a small worst-case instance from :mod:`dpkit.algorithms.audit_scenarios`
(the mechanism, one-record neighbours, the claim). Each ``audit_*`` function runs the black-box
audit on it and returns an :class:`AuditRecord`: the claim, the audit's ε lower bound with its
confidence, samples, time, the verdict, the analytic true ε where it exists and whether the
verdict is the one the spec predicts. ``main()`` runs everything at full size and writes
``docs/audits.md``::

    /work/venv/bin/python experiments/seed_audits.py [--quick] [--out docs/audits.md] [--json results.json]

The test suite (``tests/audit_seeds/test_seed_audits.py``) runs the same functions at reduced
size with fixed seeds and asserts the verdicts.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import pathlib
import platform
import time
from typing import Any


from dpkit.algorithms.audit_scenarios import AuditScenario, make_scenario
from dpkit.audit import audit, ceiling_epsilon

ROOT = pathlib.Path(__file__).resolve().parents[1]

__all__ = [
    "AuditRecord",
    "run_scenario",
    "audit_seed000_approx_minimizer",
    "audit_seed000_svt",
    "audit_seed002_sensitivity",
    "audit_seed003_dvp",
    "audit_seed004_gaussian_release",
    "audit_corrected",
    "FULL",
    "main",
]


@dataclasses.dataclass(frozen=True)
class AuditRecord:
    """One audit of one claim.

    ``epsilon_lower_bound`` holds with probability ≥ ``confidence``; ``violation`` is
    ``epsilon_lower_bound > claimed_epsilon``; ``as_predicted`` compares it with the spec.
    """

    name: str
    seed: str
    claim: str
    claimed_epsilon: float
    claimed_delta: float
    epsilon_lower_bound: float
    confidence: float
    samples: int
    seconds: float
    violation: bool
    verdict: str
    true_epsilon: float | None
    true_epsilon_note: str
    expected_violation: bool
    as_predicted: bool
    prediction: str
    p_value: float
    ceiling: float
    audit_seed: int
    witness: dict[str, Any]
    parameters: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["witness"] = json.loads(json.dumps(self.witness, default=str))
        out["parameters"] = json.loads(json.dumps(self.parameters, default=str))
        return out


def run_scenario(scenario: AuditScenario, *, samples: int, rng: int = 0, confidence: float = 0.95,
                 executor: Any = None) -> AuditRecord:
    """Audit one :class:`AuditScenario` and summarise the result."""
    result = audit(scenario.mechanism, scenario.pairs, scenario.claimed_epsilon, scenario.claimed_delta,
                   confidence=confidence, samples=samples, rng=rng, executor=executor)
    per_input = int(result.witness.get("samples_per_input", 0)) if result.witness else 0
    return AuditRecord(
        name=scenario.name, seed=scenario.seed, claim=scenario.claim, claimed_epsilon=scenario.claimed_epsilon,
        claimed_delta=scenario.claimed_delta, epsilon_lower_bound=result.epsilon_lower_bound,
        confidence=confidence, samples=result.samples, seconds=result.seconds, violation=result.violation,
        verdict="violation" if result.violation else "no violation", true_epsilon=scenario.true_epsilon,
        true_epsilon_note=scenario.true_epsilon_note, expected_violation=scenario.expect_violation,
        as_predicted=result.violation == scenario.expect_violation, prediction=scenario.prediction,
        p_value=result.p_value, ceiling=float(ceiling_epsilon(per_input, confidence)) if per_input else math.nan,
        audit_seed=int(result.seed), witness=dict(result.witness), parameters=dict(scenario.parameters),
    )


def audit_seed000_approx_minimizer(*, samples: int = 2_000_000, rng: int = 0, confidence: float = 0.95,
                                   **kwargs: Any) -> AuditRecord:
    """Spec 000 A1 (F5): factor-2 gap of PP-ADMM's output noise under an adversarial compliant optimiser."""
    return run_scenario(make_scenario("seed000-approx-minimizer", **kwargs), samples=samples, rng=rng,
                        confidence=confidence)


def audit_seed000_svt(*, samples: int = 2_000_000, rng: int = 0, confidence: float = 0.95, **kwargs: Any) -> AuditRecord:
    """Spec 000 A4: the Lyu-faithful SVT stays within ε₁ + ε₂."""
    return run_scenario(make_scenario("seed000-svt", **kwargs), samples=samples, rng=rng, confidence=confidence)


def audit_seed002_sensitivity(*, samples: int = 2_000_000, rng: int = 0, confidence: float = 0.95,
                              **kwargs: Any) -> AuditRecord:
    """Spec 002 F6: one A-DDP upload calibrated to sensitivity C against the true 2C."""
    return run_scenario(make_scenario("seed002-sensitivity", **kwargs), samples=samples, rng=rng,
                        confidence=confidence)


def audit_seed003_dvp(*, samples: int = 20_000, rng: int = 0, confidence: float = 0.95, **kwargs: Any) -> AuditRecord:
    """Spec 003 §3.2: the T-iteration DVP transcript against the per-iteration α claimed as the total."""
    return run_scenario(make_scenario("seed003-dvp-transcript", **kwargs), samples=samples, rng=rng,
                        confidence=confidence)


def audit_seed004_gaussian_release(*, samples: int = 2_000_000, rng: int = 0, confidence: float = 0.95,
                                   **kwargs: Any) -> AuditRecord:
    """Spec 004 §3.3: one DP-ADMM iterate against Theorem 1's per-iteration (ε, δ)."""
    return run_scenario(make_scenario("seed004-gaussian-release", **kwargs), samples=samples, rng=rng,
                        confidence=confidence)


def audit_corrected(name: str, *, samples: int = 2_000_000, rng: int = 0, confidence: float = 0.95,
                    **kwargs: Any) -> AuditRecord:
    """The corrected variant of scenario ``name`` (dpkit's calibration/accounting); no violation expected."""
    return run_scenario(make_scenario(name, corrected=True, **kwargs), samples=samples, rng=rng, confidence=confidence)


# full-size plan: (label, function, kwargs)
FULL: list[tuple[str, Any, dict[str, Any]]] = [
    ("seed000-approx-minimizer", audit_seed000_approx_minimizer, {"samples": 4_000_000}),
    ("seed000-svt", audit_seed000_svt, {"samples": 4_000_000}),
    ("seed002-sensitivity", audit_seed002_sensitivity, {"samples": 4_000_000}),
    ("seed003-dvp-transcript T=1", audit_seed003_dvp, {"samples": 20_000, "iterations": 1}),
    ("seed003-dvp-transcript T=10", audit_seed003_dvp, {"samples": 20_000, "iterations": 10}),
    ("seed003-dvp-transcript T=100", audit_seed003_dvp, {"samples": 20_000, "iterations": 100}),
    ("seed004-gaussian-release", audit_seed004_gaussian_release, {"samples": 4_000_000}),
    ("corrected seed000-approx-minimizer", audit_corrected, {"name": "seed000-approx-minimizer", "samples": 4_000_000}),
    ("corrected seed002-sensitivity", audit_corrected, {"name": "seed002-sensitivity", "samples": 4_000_000}),
    ("corrected seed003-dvp-transcript T=100", audit_corrected,
     {"name": "seed003-dvp-transcript", "samples": 20_000, "iterations": 100}),
    ("corrected seed004-gaussian-release T=10", audit_corrected,
     {"name": "seed004-gaussian-release", "samples": 2_000_000, "iterations": 10}),
]


def _quick(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Reduced sizes: a tenth of the samples for the Gaussian-type audits; DVP keeps its samples, T ≤ 30."""
    out = dict(kwargs)
    if "dvp" in str(kwargs.get("name", "")) or kwargs["samples"] <= 20_000:
        out["iterations"] = min(out.get("iterations", 30), 30)
    else:
        out["samples"] = kwargs["samples"] // 10
        if "iterations" in out:
            out["iterations"] = min(out["iterations"], 5)
    return out


def _label(label: str, kwargs: dict[str, Any]) -> str:
    base = label.split(" T=")[0]
    return f"{base} T={kwargs['iterations']}" if "iterations" in kwargs else base


def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{x:.{digits}f}"


def render_markdown(records: list[tuple[str, AuditRecord]], total_seconds: float, quick: bool) -> str:
    """The ``docs/audits.md`` page (table + one paragraph per seed); no doctests."""
    lines = [
        "# Audits of the seed papers' privacy claims",
        "",
        "Every number on this page was produced by `experiments/seed_audits.py` "
        + ("(**quick mode**, reduced sizes)" if quick else "(full size)")
        + f" in {total_seconds:.0f} s on {platform.machine()} / Python {platform.python_version()}, "
        "one process, audit seed 0, confidence 0.95. The scenarios (mechanism, neighbouring pair, claim) are in "
        "`dpkit/algorithms/audit_scenarios.py`; the audit is `dpkit.audit.audit` (select-then-confirm, one-sided "
        "Clopper–Pearson, Bonferroni over the confirmed events). An ε lower bound (LB) holds with probability ≥ 0.95; "
        "*violation* means LB > claimed ε. \"Ceiling\" is the largest LB the confirmation sample could show "
        "(`dpkit.audit.ceiling_epsilon`). \"True ε\" is the exact ε of the instance at the claimed δ where it has a "
        "closed form (analytic Gaussian, Balle & Wang 2018).",
        "",
        "| audit | claim (ε, δ) | ε LB (95 %) | true ε | ceiling | samples | time (s) | verdict | spec predicts | as predicted |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, r in records:
        lines.append(
            f"| {label} | ({_fmt(r.claimed_epsilon, 4)}, {r.claimed_delta:g}) | {_fmt(r.epsilon_lower_bound)} | "
            f"{_fmt(r.true_epsilon)} | {_fmt(r.ceiling, 2)} | {r.samples:,} | {r.seconds:.1f} | **{r.verdict}** | "
            f"{'violation' if r.expected_violation else 'no violation'} | {'yes' if r.as_predicted else '**NO**'} |"
        )
    lines += ["", "## Per seed", ""]
    for label, r in records:
        params = ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.parameters.items())
        lines += [
            f"### {label}",
            "",
            f"- **Claim:** {r.claim}.",
            f"- **Audit:** ε LB = {_fmt(r.epsilon_lower_bound, 4)} at confidence {r.confidence} "
            f"(p-value of the claim {r.p_value:.3g}), {r.samples:,} mechanism outputs, {r.seconds:.1f} s → **{r.verdict}**.",
            f"- **True ε:** {_fmt(r.true_epsilon, 4)} ({r.true_epsilon_note}).",
            f"- **Spec predicted:** {r.prediction}. Verdict {'matches' if r.as_predicted else 'DOES NOT match'}.",
            f"- **Witness:** event {json.dumps(r.witness.get('event'), default=str)}, counts "
            f"{r.witness.get('count_numerator')} vs {r.witness.get('count_denominator')} of "
            f"{r.witness.get('samples_per_input')} per input.",
            f"- **Instance:** {params}.",
            "",
        ]
    lines += [
        "## How to read this",
        "",
        "- seed 000 A1 (flag F5): the paper's σ_i2 uses sensitivity β/μ; an optimiser that only promises "
        "‖∇F(θ̂)‖ ≤ β may put neighbouring θ̂ at opposite ends of the β/μ ball, so the step is 4ρ-zCDP. The claim is tested "
        "through the optimal ρ-zCDP → (ε, δ) conversion, which bounds *every* ρ-zCDP mechanism, so a violation refutes "
        "ρ-zCDP itself. dpkit's `ApproximateMinimizerNoise` defaults to sensitivity_factor=2 (corrected row).",
        "- seed 000 A4: the Lyu-faithful SVT on quality scores with sensitivity 2C_loss, all StatDP-style pairs "
        "(Ding et al. 2018, with mirror images); "
        "no violation of ε₁ + ε₂ is expected (and the LB is well below it).",
        "- seed 002 F6: one A-DDP upload with σ calibrated to Δ = C; the sampled record's clipped gradient can move by 2C. "
        "The corrected pipeline calibrates to 2C.",
        "- seed 003: each DVP step is α-DP given the public history (corrected ζ = α̂/2), but the transcript composes. "
        "The mechanism returns the exact transcript log-likelihood ratio (spec 003 Appendix), a post-processing of "
        "the broadcasts; the LB grows with T and exceeds α. The corrected claim is `dvp_total_epsilon` (smallest of "
        "basic, advanced and zCDP composition).",
        "- seed 004: DP-ADMM iterates at the worst-case pair of spec 004 T17 (saturated opposite gradients); the "
        "mechanism returns the exact log-likelihood ratio of the released iterates. Theorem 1's classical Gaussian "
        "calibration is valid and loose (one iterate), and the exact GDP total over T iterates (dpkit's corrected "
        "accounting; the paper's Theorem 2 has no computable c0) is not contradicted.",
        "",
        "Reproduce: `/work/venv/bin/python experiments/seed_audits.py` (full) or `--quick`; "
        "`dpkit audit --algorithm NAME` runs one scenario from the command line.",
        "",
        "## Run one audit yourself",
        "",
        ">>> from dpkit.algorithms.audit_scenarios import make_scenario",
        ">>> from dpkit.audit import audit",
        ">>> sc = make_scenario(\"seed002-sensitivity\")      # A-DDP upload, sigma for sensitivity C",
        ">>> round(sc.true_epsilon, 3)                        # exact epsilon at delta = 1e-5 (true sensitivity 2C)",
        "2.155",
        ">>> r = audit(sc.mechanism, sc.pairs, sc.claimed_epsilon, sc.claimed_delta, samples=200_000, rng=0)",
        ">>> r.violation, 1.0 < r.epsilon_lower_bound < sc.true_epsilon",
        "(True, True)",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="reduced sizes (about a minute)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "audits.md"))
    parser.add_argument("--json", default=None, help="also write the records as JSON here")
    parser.add_argument("--from-json", default=None, help="re-render the page from a JSON written by --json")
    args = parser.parse_args(argv)
    if args.from_json:
        data = json.loads(pathlib.Path(args.from_json).read_text(encoding="utf-8"))
        meta = data.pop("_meta", None)
        loaded = [(label, AuditRecord(**rec)) for label, rec in data.items()]
        if meta is None:  # older file: the audits' own times
            meta = {"seconds": sum(r.seconds for _, r in loaded), "quick": False}
        pathlib.Path(args.out).write_text(render_markdown(loaded, meta["seconds"], meta["quick"]), encoding="utf-8")
        return 0 if all(r.as_predicted for _, r in loaded) else 1
    start = time.perf_counter()
    records: list[tuple[str, AuditRecord]] = []
    for label, function, kwargs in FULL:
        kw = _quick(kwargs) if args.quick else dict(kwargs)
        label = _label(label, kw)
        record = function(**kw)
        records.append((label, record))
        print(f"{label}: LB={record.epsilon_lower_bound:.4f} claim={record.claimed_epsilon:.4f} "
              f"true={record.true_epsilon} {record.verdict} ({record.seconds:.1f} s)", flush=True)
    total = time.perf_counter() - start
    pathlib.Path(args.out).write_text(render_markdown(records, total, args.quick), encoding="utf-8")
    if args.json:
        payload: dict[str, Any] = {label: r.to_dict() for label, r in records}
        payload["_meta"] = {"seconds": total, "quick": bool(args.quick)}
        pathlib.Path(args.json).write_text(json.dumps(payload, indent=2, default=str), encoding="utf-8")
    return 0 if all(r.as_predicted for _, r in records) else 1


if __name__ == "__main__":
    raise SystemExit(main())
