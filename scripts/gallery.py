"""Audit the DP libraries people use, as executed, and write docs/gallery.md.

    python scripts/gallery.py            # full budget (10^6 outputs per case)
    python scripts/gallery.py --small    # CI budget (each case's small_samples, 10^4 to 3*10^4 outputs)

Needs the ``gallery`` extra (``pip install -e .[gallery]``). Every case is
``dpkit.audit.audit(case.mechanism, case.pairs, case.claimed_epsilon, case.claimed_delta,
samples=N, rng=0, float_events=True, answer=case.answer)`` on a case of :mod:`dpkit.audit.libraries`
(or dpkit's own mechanisms below; the float-bit events are on by default), so each row is reproduced
by the command printed under the table.
"""

from __future__ import annotations

import argparse
import datetime
import os
import resource
import sys
import time
from typing import Any

import numpy as np

from dpkit.accounting.events import GaussianEvent, SelfComposedEvent
from dpkit.accounting.registry import make_accountant
from dpkit.audit import audit
from dpkit.audit import catalogue
from dpkit.audit.libraries import LibraryCase, library_cases, seed_reproducible
from dpkit.mechanisms.discrete import DiscreteLaplaceMechanism
from dpkit.mechanisms.gaussian import GaussianMechanism
from dpkit.mechanisms.laplace import LaplaceMechanism
from dpkit.mechanisms.snapping import SnappingMechanism

_BRIDGED = "bridged: rng is passed to mech.sample"


def dpkit_cases() -> list[LibraryCase]:
    """dpkit's own mechanisms on the same sum of records in [0, 1] (sensitivity 1): the Laplace and
    Gaussian mechanisms as they are by default (float-safe: private as executed) beside their
    ``float_safe=False`` opt-out (numpy's continuous samplers, not private as executed), and the
    snapping and discrete mechanisms."""
    pairs = [(np.zeros(10), np.r_[1.0, np.zeros(9)])]
    relation = "replace one record in [0, 1] of a sum (sensitivity 1)"

    def on_sum(mech: Any) -> Any:
        def mechanism(db: Any, n: int, rng: np.random.Generator) -> np.ndarray:
            total = np.sum(db)
            value = int(total) if mech.floating_point_safe and float(total).is_integer() else float(total)
            return np.asarray(mech.sample(value, size=n, rng=rng), dtype=float)
        return mechanism

    snap = SnappingMechanism.from_epsilon(1.0, bound=100.0)
    laplace, gaussian = LaplaceMechanism.from_epsilon(1.0), GaussianMechanism.from_epsilon_delta(1.0, 1e-5)
    return [
        LibraryCase("dpkit", "numpy", "LaplaceMechanism (eps 1)", on_sum(laplace), pairs, laplace.epsilon, 0.0,
                    "from_epsilon(1.0).epsilon", relation, _BRIDGED, "pass", answer=np.sum),
        LibraryCase("dpkit", "numpy", "LaplaceMechanism float_safe=False (eps 1)",
                    on_sum(LaplaceMechanism.from_epsilon(1.0, float_safe=False)), pairs, 1.0, 0.0,
                    "from_epsilon(1.0, float_safe=False)", relation, _BRIDGED, "refute", answer=np.sum),
        LibraryCase("dpkit", "numpy", "GaussianMechanism (1, 1e-5)", on_sum(gaussian), pairs, gaussian.epsilon(1e-5),
                    1e-5, "from_epsilon_delta(1.0, 1e-5).epsilon(1e-5)", relation, _BRIDGED, "pass", answer=np.sum),
        LibraryCase("dpkit", "numpy", "GaussianMechanism float_safe=False (1, 1e-5)",
                    on_sum(GaussianMechanism.from_epsilon_delta(1.0, 1e-5, float_safe=False)), pairs, 1.0, 1e-5,
                    "from_epsilon_delta(1.0, 1e-5, float_safe=False)", relation, _BRIDGED, "refute", answer=np.sum),
        LibraryCase("dpkit", "numpy", "SnappingMechanism (eps 1, bound 100)", on_sum(snap), pairs, snap.epsilon, 0.0,
                    "SnappingMechanism.epsilon", relation, _BRIDGED, "pass", answer=np.sum),
        LibraryCase("dpkit", "numpy", "DiscreteLaplaceMechanism (scale 1)",
                    on_sum(DiscreteLaplaceMechanism(scale=1, sensitivity=1)), pairs, 1.0, 0.0,
                    "DiscreteLaplaceMechanism.epsilon", relation, _BRIDGED, "pass", answer=np.sum),
    ]


_CHUA = "Chua et al. 2024, How Private are DP-SGD Implementations?"


def batching_cases() -> list[LibraryCase]:
    """One epoch of DP-SGD-like noisy batch sums (``dpkit.audit.catalogue``: σ = 1, 16 steps of one
    record, records are clipped gradients in [−1, 1], float-safe noise from the audit's rng) on Chua et
    al. 2024's pairs, under two batch samplers: shuffled fixed-size batches at the ε "as papers report
    it" (Poisson subsampling at rate 1/16) and at their proven no-amplification ε (one Gaussian release),
    and random allocation at its own certified ε (``RandomAllocationEvent``). 10⁶ outputs each, also in
    the CI budget: the refutation needs about that many."""
    sigma, steps, delta = catalogue.BATCH_SIGMA, catalogue.BATCH_STEPS, catalogue.BATCH_DELTA
    pairs = catalogue.batching_pairs()
    relation = "zero out one record (its gradient in [-1, 1] set to 0; Chua et al. 2024)"
    label = "Chua et al. 2024: 15 records at -1 and one at +1 vs 0; 15 at 0 and one at +1 vs 0"
    bridged = "bridged: the audit's rng draws the batches and the noise"
    unamplified = make_accountant("analytic").compose(SelfComposedEvent(GaussianEvent(sigma), 1))
    shuffled = f"DP-SGD sums, shuffled batches (sigma {sigma:g}, {steps} steps)"
    common = dict(claimed_delta=delta, relation=relation, rng=bridged, reference=_CHUA, small_samples=1_000_000,
                  pairs_label=label)
    return [
        LibraryCase("dpkit", "numpy", f"{shuffled}, Poisson eps", catalogue.shuffled_batches, pairs,
                    catalogue.poisson_claim(), expected="refute",
                    claim_source=f"PLD of PoissonSampledEvent(GaussianEvent({sigma:g}), 1/{steps}) x {steps}",
                    **common),
        LibraryCase("dpkit", "numpy", f"{shuffled}, no amplification", catalogue.shuffled_batches, pairs,
                    unamplified.get_epsilon(delta).epsilon, expected="pass",
                    claim_source=f"analytic Gaussian of GaussianEvent({sigma:g}) (each record used once)", **common),
        LibraryCase("dpkit", "numpy", f"DP-SGD sums, random allocation (sigma {sigma:g}, {steps} steps)",
                    catalogue.random_allocation, pairs, catalogue.random_allocation_claim(), expected="pass",
                    claim_source=f"PLD (else RDP) of RandomAllocationEvent(GaussianEvent({sigma:g}), {steps})",
                    **common),
    ]


def _cpu() -> float:
    """CPU seconds of this process and its finished workers (the audit may run workers in parallel)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


FIRST_DRAWS, MOST_DRAWS = 3, 7
"""A row whose library ignores the seed is audited on fresh draws until its verdict is stable: 3 draws,
and 7 when those 3 disagree; the page shows the majority verdict and how many draws refuted."""


def _audit(case: LibraryCase, samples: int, draw: int) -> Any:
    return audit(case.mechanism, case.pairs, case.claimed_epsilon, case.claimed_delta, samples=samples, rng=draw,
                 float_events=case.float_events, float_bits=case.float_events, answer=case.answer)


def run(cases: list[LibraryCase], small: bool) -> list[dict[str, Any]]:
    rows = []
    for case in cases:
        samples = case.small_samples if small else 1_000_000
        reproducible = seed_reproducible(case.mechanism, case.pairs[0][0])
        start = time.perf_counter(), _cpu()
        draws = [_audit(case, samples, 0)]
        while not reproducible and len(draws) < MOST_DRAWS and (
                len(draws) < FIRST_DRAWS or len({d.violation for d in draws}) > 1):
            draws.append(_audit(case, samples, len(draws)))
        refuted = sum(d.violation for d in draws)
        majority = [d for d in draws if d.violation == (2 * refuted > len(draws))]
        shown = sorted(majority, key=lambda d: d.epsilon_lower_bound)[len(majority) // 2]  # the median bound
        rows.append({"case": case, "result": shown, "draws": len(draws), "refuted": refuted,
                     "seconds": time.perf_counter() - start[0], "cpu": _cpu() - start[1],
                     "reproducible": reproducible})
        print(f"{case.library:12} {case.name:45} lb={shown.epsilon_lower_bound:6.2f} "
              f"{'REFUTED' if shown.violation else 'pass'} ({refuted}/{len(draws)} draws refuted)", file=sys.stderr)
    return rows


def _verdict(case: LibraryCase, violation: bool, family: str) -> str:
    """The verdict, and for a refuted mechanism whose claim is right on paper, what the leak is."""
    if not violation:
        return "pass"
    if case.expected == "refute" and case.reference.endswith("/105"):
        return "**refuted** (sensitivity bug)"
    if case.reference == _CHUA:
        return "**refuted** (the claim is Poisson's, the batches are shuffled)"
    if family.startswith("float") and "false claim" not in case.name:
        return "**refuted** (float leak)"
    return "**refuted**"


def page(rows: list[dict[str, Any]], small: bool) -> str:
    out = ["# Gallery: DP libraries audited as executed", "",
           f"Generated by `python scripts/gallery.py{' --small' if small else ''}` on "
           f"{datetime.date.today().isoformat()}: every case is `dpkit.audit.audit(..., samples=N, rng=0, "
           "float_events=True, answer=case.answer)` on a case of `dpkit.audit.libraries` (or dpkit's own mechanisms), "
           "so the float-bit events of the outputs (on by default: ulp grid, last bits, and the lattice of output − "
           "answer) are audited with no distinguisher written by hand (the #105 regression case runs with "
           "`float_events=False, float_bits=False`, so its refutation comes from the values, not from a float leak). "
           "dpkit's `LaplaceMechanism` and `GaussianMechanism` appear twice: as they are by default (float-safe: the "
           "continuous output rounded exactly to a power-of-two lattice, private as executed) and with the "
           "`float_safe=False` opt-out (numpy's continuous samplers, not private as executed). "
           "A refutation is a lower bound above the claim at confidence 0.95 (one exact Clopper–Pearson test of the "
           "probability ratio on Poisson counts). "
           "\"float leak\" marks a mechanism "
           "whose claim is right on paper but is refuted through the bits of its float outputs (a true finding, "
           "not a false alarm). A row whose library ignores the seed (seed-reproducible: no) cannot be rerun "
           f"draw for draw, so it is audited on {FIRST_DRAWS} fresh draws, and on {MOST_DRAWS} when those "
           "disagree; its verdict is the majority (\"draws refuted\" counts them) and its bound the median of "
           "the majority's. A row that needs more than the first draws sits near the audit's power at this "
           "budget.", "",
           "| library | version | mechanism | claim (ε, δ) | claim read from | relation | pairs | samples | "
           "ε lower bound | verdict | expected | RNG | seed-reproducible | draws refuted | time (s) | CPU (s) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        c, r = row["case"], row["result"]
        event = r.witness.get("event", {}).get("family", "") if isinstance(r.witness.get("event"), dict) else ""
        verdict = _verdict(c, r.violation, event)
        out.append(f"| {c.library} | {c.version} | {c.name} | ({c.claimed_epsilon:.4g}, {c.claimed_delta:g}) | "
                   f"{c.claim_source} | {c.relation} | {c.pairs_label} | {r.samples} | "
                   f"{r.epsilon_lower_bound:.2f}{' (' + event + ')' if r.violation else ''} | {verdict} | "
                   f"{c.expected} | {c.rng.split(':')[0]} | {'yes' if row['reproducible'] else 'no'} | "
                   f"{row['refuted']}/{row['draws']} | "
                   f"{row['seconds']:.1f} | {row['cpu']:.1f} |")
    wrong = [row for row in rows if (row["result"].violation) != (row["case"].expected == "refute")]
    out += ["", f"{len(rows)} cases; {sum(r['result'].violation for r in rows)} refuted; "
            f"{len(wrong)} differ from the expected verdict; total CPU {sum(r['cpu'] for r in rows):.0f} s"
            + (": " + ", ".join(f"{w['case'].library} {w['case'].name}" for w in wrong) if wrong else "") + ".", ""]
    return "\n".join(out + _STATIC)


_STATIC = """## Reproduce a row

```
pip install -e ".[gallery]"
python scripts/gallery.py --small --output /tmp/gallery.md      # all rows, the CI budget
python -c "from dpkit.audit import audit; from dpkit.audit.libraries import library_cases; \\
c = [c for c in library_cases() if c.name.startswith('mechanisms.Laplace')][0]; \\
print(audit(c.mechanism, c.pairs, c.claimed_epsilon, c.claimed_delta, samples=10**6, rng=0, float_events=True, \\
answer=c.answer))"
```

dpkit's own rows are `dpkit_cases()` and `batching_cases()` in `scripts/gallery.py`. Rows whose RNG is not
bridged (OpenDP, python-dp, Pipeline-DP) draw from the library's own generator: `rng=0` does not reproduce their
outputs, only their verdict up to the audit's error rate (0.05).

## DP-SGD's batch sampling: shuffled batches are not Poisson samples

The three "DP-SGD sums" rows release one epoch of noisy batch sums (σ = 1, 16 steps; records are clipped
gradients in [−1, 1]) on the neighbours of Chua et al. (ICML 2024): 15 records at −1 and one at +1, against the
same with that record zeroed out. With **shuffled fixed-size batches** every batch without the record sums to a
known constant, so the batch that holds it stands out; the true ε is at least 4.32 at δ = 10⁻⁵ (a certified lower
bound, `dpkit.accounting.shuffled_batches`), while the ε papers report for such a run, Poisson subsampling at rate
1/16, is 2.24: the audit refutes that claim from the values (the maximum batch sum), and passes the proven
no-amplification ε (4.38, one Gaussian release). With **random allocation** (each record in one uniformly random
step) the batch sizes vary, so the offset that gives the record away is itself random, and on the all-zero pair
(its worst case) the mechanism passes at its own certified ε (1.79 from the PLD accountant when these rows were
run, below even the Poisson number). The mechanisms are `shuffled_batches` and `random_allocation` in
`dpkit.audit.catalogue`; `dpkit audit --mechanism dpkit.audit.catalogue:shuffled_batches --pairs
dpkit.audit.catalogue:batching_pairs --claimed-epsilon 2.2427 --claimed-delta 1e-5` refutes the Poisson claim at
the default 10⁷ samples (bound 3.29, about 20 s).

## Known bugs of these libraries (regression cases)

| library | issue | what | status here |
|---|---|---|---|
| diffprivlib | [#94](https://github.com/IBM/differential-privacy-library/issues/94) | precision attacks on the float Laplace/Gaussian samplers (Haney et al. 2022) | case `mechanisms.Laplace`, `mechanisms.GaussianAnalytic`: refuted from the outputs alone (open upstream) |
| diffprivlib | [#105](https://github.com/IBM/differential-privacy-library/issues/105) | `LinearRegression` computes sensitivity 0 when a feature's lower bound is 0 | case `models.LinearRegression coef ... #105`: the X_i^2 term of the objective is released without noise, so two datasets whose sums of x^2 differ (1 vs 0.01) scale the coefficient's noise by 100; refuted (open upstream; fix proposed in [PR #110](https://github.com/IBM/differential-privacy-library/pull/110)) |
| diffprivlib | [#104](https://github.com/IBM/differential-privacy-library/issues/104) | five reported places, the first being #105; the second says `LinearRegression(fit_intercept=True)` centres X and y on one budget share without composing the two | not reproduced here: no case audits the intercept path yet (open upstream) |
| Pipeline-DP 0.3.1 (python-dp 1.1.5) | none found (searched the PipelineDP and google/differential-privacy trackers on 2026-12-02) | the Gaussian SUM leaks through its float bits: on the sum 0, about 37 % of the outputs in [−2, −1) are odd multiples of 2⁻⁵², which the sum 1 plus noise cannot produce (0 of 16,945 in 200,000 draws) | case `DPEngine SUM, Gaussian noise`: refuted from the outputs alone (not reported upstream as far as we found) |

Tracker status as read from the trackers on 2026-11-27 (the page's generator does not query them).

## Which checks analyse which library

| check | diffprivlib | OpenDP | python-dp | Pipeline-DP | dpkit |
|---|---|---|---|---|---|
| value events (thresholds, patterns, learned score) | yes | yes | yes | yes | yes |
| float-bit events (ulp grid, last bits, lattice of output − answer; on by default, `float_bits=True`) | yes | yes | yes | yes | yes |
| replay of the sampler (`float_events=True`) | no: draws through a `RandomState`, not the `Generator` API | no: own CSPRNG | no: own generator (C++) | no: own noise module | the continuous Laplace (one uniform per output); not the ziggurat Gaussian; the float-safe defaults until a probe needs their slow path (more bits: the pair is then not analysable) |
| seed reproducibility | yes (`random_state` bridged) | no | no | no | yes |
| vector form (one call, n outputs) | no (one `randomise`/tool call per output) | yes (vector domain) | no (one `quick_result` per output) | yes (n public partitions, one privacy unit per record) | yes |

A replay that cannot run spends no α and the result says so (`float_check`). The OpenDP Gaussian claim is its
ρ-zCDP map converted to (ε, 10⁻⁵)-DP (Bun & Steinke 2016, Prop. 1.3); δ > 0 cases are certified less tightly
than pure-ε ones, so their lower bounds stay well under the claim. "float leak" rows are correct on paper and leak
through the bits of float outputs (Haney et al. 2022); the diffprivlib float samplers and dpkit's continuous
`LaplaceMechanism`/`GaussianMechanism` (the `float_safe=False` opt-out) are in this class; dpkit's float-safe
defaults pass.
""".splitlines()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="CI budget: each case's small_samples outputs")
    parser.add_argument("--output", default=os.path.join("docs", "gallery.md"))
    parser.add_argument("--force", action="store_true", help="replace an existing output file")
    args = parser.parse_args(argv)
    rows = run(library_cases() + dpkit_cases() + batching_cases(), args.small)
    text = page(rows, args.small)
    with open(args.output + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(text)
    if not args.force and os.path.exists(args.output):
        os.remove(args.output + ".tmp")
        raise SystemExit(f"--output {args.output!r} exists; use --force to replace it")
    os.replace(args.output + ".tmp", args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
