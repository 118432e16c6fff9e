"""Benchmark: dpkit's random-allocation PLD against dp_accounting's (unreleased) random-allocation PLD.

Random allocation ("balls and bins"): a Gaussian mechanism (noise multiplier σ) runs ``t`` times in an
epoch and each record takes part in ``k`` of the runs, chosen uniformly; E epochs allocate afresh.
Add/remove neighbours. For each case and value discretisation h we print, side by side:

* dp_accounting — ``dp_accounting.pld.random_allocation.api.gaussian_allocation_pld`` with
  ``PrivacyParams(sigma, num_steps=t, num_selected=k, num_epochs=E)`` and
  ``AllocationSchemeConfig(value_discretization_interval=h)`` (default tail truncation 1e-12), built
  twice: ``BoundType.IS_DOMINATED`` gives the lower end, ``BoundType.DOMINATES`` the upper end
  (``get_epsilon_for_delta``); the time is the two builds together. This code is in no release: it
  is on the pull-request branch of google/differential-privacy (refs/pull/414/head, commit
  125d46c8cb4253115c545dd4d574a2d5e52ef4bd, python/dp_accounting/). When that package is not
  importable the values and times recorded in ``benchmarks/random_allocation_reference.json`` are
  shown instead, and the output says so;
* dpkit — ``PLDAccountant(neighbouring="add-remove", value_discretization_interval=h)`` (the same
  grid spacing) and ``PLDAccountant(neighbouring="add-remove", target_width=w)`` with w the width
  dp_accounting achieved at h, composing
  ``SelfComposedEvent(RandomAllocationEvent(GaussianEvent(σ), steps=t, selected=k), E)``;

with the time ratio (dp_accounting over dpkit, as in the other benchmarks) and two checks of
dpkit's certified interval against dp_accounting's: *contained* (dpkit's lower end ≥ their lower end
− h, and dpkit's upper end ≤ their upper end) and *overlaps* (the two intervals intersect).

For k > 1 both libraries bound the same decomposition (k − t mod k allocations of ⌊t/k⌋ steps and
t mod k of ⌈t/k⌉, composed; Feldman & Shenfeld 2025), which dominates k-of-t allocation: the lower
ends are lower bounds for the decomposition, not for the k-of-t scheme itself.

Usage (from the repository root)::

    python benchmarks/random_allocation.py                   # every recorded case
    python benchmarks/random_allocation.py --h 1e-3          # only the h = 1e-3 rows
    python benchmarks/random_allocation.py --peer recorded   # never rerun dp_accounting
    python benchmarks/random_allocation.py --json            # one JSON object per row
    python benchmarks/random_allocation.py --record          # rerun dp_accounting, rewrite the JSON

``--record`` needs the branch's dp_accounting (a separate environment, as it pins older
typing-extensions; it is no dependency of dpkit)::

    git archive 125d46c8cb4253115c545dd4d574a2d5e52ef4bd python/dp_accounting | tar -x -C SRC
    python -m venv VENV && VENV/bin/pip install SRC/python/dp_accounting && VENV/bin/pip install -e .
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import re
import sys
import time
from pathlib import Path

from dpkit.accounting.events import GaussianEvent, RandomAllocationEvent, SelfComposedEvent
from dpkit.accounting.pld import PLDAccountant

REFERENCE = Path(__file__).resolve().parent / "random_allocation_reference.json"

SOURCE = {
    "repository": "google/differential-privacy",
    "ref": "refs/pull/414/head",
    "commit": "125d46c8cb4253115c545dd4d574a2d5e52ef4bd",
    "path": "python/dp_accounting/dp_accounting/pld/random_allocation/api.py",
    "function": "dp_accounting.pld.random_allocation.api.gaussian_allocation_pld",
}

# Value discretisations to record: dp_accounting's time grows like 1/h² (5 s per bound at h = 1e-3 for
# t = 100, 52 s at 3e-4); h = 1e-4 at t = 100 ran past 17 minutes per bound on the 2-core machine, so t = 100
# stops at 3e-4.
CASES = [  # name, sigma, steps t, selected k, epochs E, delta, value discretisations to record
    ("sigma=1 t=100 k=1 E=1", 1.0, 100, 1, 1, 1e-5, (1e-3, 3e-4)),
    ("sigma=1 t=100 k=1 E=10", 1.0, 100, 1, 10, 1e-5, (1e-3, 3e-4)),
    ("sigma=2 t=1000 k=1 E=1", 2.0, 1000, 1, 1, 1e-5, (1e-3, 3e-4, 1e-4)),
    ("sigma=1 t=100 k=2 E=1", 1.0, 100, 2, 1, 1e-5, (1e-3, 3e-4)),
]


# ----------------------------------------------------------------------------------------------
# dp_accounting (imported lazily: the released packages have no random_allocation)
# ----------------------------------------------------------------------------------------------

def _peer_api():
    try:
        from dp_accounting.pld.random_allocation import api, definitions
    except ImportError:
        return None
    return api, definitions


def run_dp_accounting(peer, sigma, steps, selected, epochs, delta, h):
    """dp_accounting's [lower, upper] at value discretisation h, with the time of each build."""
    api, definitions = peer
    row = {}
    for bound, key in ((definitions.BoundType.IS_DOMINATED, "lower"), (definitions.BoundType.DOMINATES, "upper")):
        start = time.perf_counter()
        pld = api.gaussian_allocation_pld(
            definitions.PrivacyParams(sigma=sigma, num_steps=steps, num_selected=selected, num_epochs=epochs),
            definitions.AllocationSchemeConfig(value_discretization_interval=h),
            bound)
        row[f"epsilon_{key}"] = float(pld.get_epsilon_for_delta(delta))
        row[f"seconds_{key}"] = time.perf_counter() - start
    row["width"] = row["epsilon_upper"] - row["epsilon_lower"]
    row["seconds"] = row["seconds_lower"] + row["seconds_upper"]
    return row


def record(max_seconds: float) -> None:
    """Rerun dp_accounting on every case and rewrite the reference JSON (finer h skipped when the
    time predicted from the previous h, which grows like 1/h², exceeds ``max_seconds`` per bound)."""
    peer = _peer_api()
    if peer is None:
        sys.exit("--record needs dp_accounting with pld.random_allocation (see the module docstring)")
    import numpy
    import scipy

    entries = []
    for name, sigma, steps, selected, epochs, delta, grid in CASES:
        previous = None
        for h in grid:
            case = {"case": name, "sigma": sigma, "steps": steps, "selected": selected, "epochs": epochs,
                    "delta": delta, "value_discretization_interval": h}
            if previous is not None:
                predicted = max(previous[1]["seconds_lower"], previous[1]["seconds_upper"]) * (previous[0] / h) ** 2
                if predicted > max_seconds:
                    print(f"{name} h={h:g}: skipped (predicted {predicted:.0f} s per bound)", flush=True)
                    continue
            load = os.getloadavg()[0]
            result = run_dp_accounting(peer, sigma, steps, selected, epochs, delta, h)
            result["load_average_1min_before"] = round(load, 2)
            print(f"{name} h={h:g}: [{result['epsilon_lower']:.9f}, {result['epsilon_upper']:.9f}]"
                  f" {result['seconds_lower']:.1f} s + {result['seconds_upper']:.1f} s", flush=True)
            entries.append({**case, **result})
            previous = (h, result)
    payload = {
        "description": (
            "Reference values for dpkit's random-allocation PLD from an independent implementation: "
            "dp_accounting's random-allocation PLD (Feldman & Shenfeld, arXiv 2602.17284), which is in no "
            "release of dp_accounting. epsilon_lower is get_epsilon_for_delta of the BoundType.IS_DOMINATED "
            "PLD, epsilon_upper that of the BoundType.DOMINATES PLD, at the given "
            "value_discretization_interval. Add/remove neighbours. For selected > 1 both bounds are of "
            "dp_accounting's decomposition into 1-of-t' allocations, which dominates k-of-t allocation."),
        "provenance": {
            **SOURCE,
            "call": ("gaussian_allocation_pld(PrivacyParams(sigma, num_steps=steps, num_selected=selected, "
                     "num_epochs=epochs), AllocationSchemeConfig(value_discretization_interval=h), bound_type)"
                     ".get_epsilon_for_delta(delta)"),
            "config": {"tail_truncation": 1e-12, "max_grid_mult": -1,
                       "note": "AllocationSchemeConfig defaults apart from value_discretization_interval"},
            "installed_as": "pip install of the python/dp_accounting tree at that commit (setup.py, version "
                            f"{importlib.metadata.version('dp-accounting')}; no numba), in a separate venv",
            "python": platform.python_version(), "numpy": numpy.__version__, "scipy": scipy.__version__,
            "date": datetime.date.today().isoformat(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, shared with other jobs (the 1-minute load "
                       "average before each entry is in the entry); times are one run each, wall clock, in one "
                       "process, entries run one after another",
            "not_recorded": ("h=1e-4 for t=100 (sigma=1, E=1 and E=10, k=2): the DOMINATES build at sigma=1 t=100 "
                             "E=1 was still running after 17 minutes and was stopped; the time grows like 1/h^2"),
            "recorded_by": "python benchmarks/random_allocation.py --record",
            "max_seconds_per_bound": max_seconds,
        },
        "entries": entries,
    }
    REFERENCE.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {REFERENCE}")


# ----------------------------------------------------------------------------------------------
# dpkit
# ----------------------------------------------------------------------------------------------

def run_dpkit(sigma, steps, selected, epochs, delta, **mode):
    start = time.perf_counter()
    try:
        event = SelfComposedEvent(RandomAllocationEvent(GaussianEvent(sigma), steps=steps, selected=selected), epochs)
        result = PLDAccountant(neighbouring="add-remove", **mode).compose(event).get_epsilon(delta)
    except Exception as error:  # a benchmark reports and goes on
        return {"error": f"{type(error).__name__}: {error}", "seconds": time.perf_counter() - start}
    lower = result.epsilon_lower
    grid = [m.group(1) for note in result.notes if (m := re.search(r"discretisation interval h=([0-9.e+-]+)", note))]
    return {"epsilon_lower": lower, "epsilon": result.epsilon,
            "width": None if lower is None else result.epsilon - lower,
            "seconds": time.perf_counter() - start, "h_used": float(grid[-1]) if grid else None,
            "notes": list(result.notes)}


def compare(ours, theirs, h):
    """Contained (ours ⊆ theirs, lower end up to h below theirs) and overlapping intervals."""
    if "error" in ours or ours["epsilon_lower"] is None:
        return {}
    return {"contained": ours["epsilon_lower"] >= theirs["epsilon_lower"] - h
            and ours["epsilon"] <= theirs["epsilon_upper"],
            "overlaps": ours["epsilon_lower"] <= theirs["epsilon_upper"]
            and theirs["epsilon_lower"] <= ours["epsilon"]}


def _interval(lower, upper):
    return f"[{lower:.6f}, {upper:.6f}] width {upper - lower:.2e}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help="rerun dp_accounting and rewrite the reference JSON")
    parser.add_argument("--max-seconds", type=float, default=600.0,
                        help="with --record: skip a finer h predicted to take longer per bound")
    parser.add_argument("--peer", choices=("auto", "live", "recorded"), default="auto",
                        help="auto: rerun dp_accounting where importable and its recorded time is at most "
                             "--live-max-seconds, else show the recorded values")
    parser.add_argument("--live-max-seconds", type=float, default=60.0)
    parser.add_argument("--h", type=float, nargs="*", default=None, help="only these value discretisations")
    parser.add_argument("--only", nargs="*", default=None, help="only the cases whose name contains one of these")
    parser.add_argument("--no-target-width", action="store_true", help="skip the target-width runs of dpkit")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.record:
        record(args.max_seconds)
        return

    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    peer = _peer_api() if args.peer != "recorded" else None
    if args.peer == "live" and peer is None:
        sys.exit("--peer live needs dp_accounting with pld.random_allocation (see the module docstring)")
    if not args.json:
        source = reference["provenance"]
        print(f"dp_accounting: {source['function']} ({source['repository']} {source['ref']}, "
              f"commit {source['commit'][:12]})")
        if peer is None:
            print(f"  not importable here (or --peer recorded): its values and times are the ones recorded in "
                  f"{REFERENCE.name} on {source['date']} (machine and load: its provenance)")
    for entry in reference["entries"]:
        h = entry["value_discretization_interval"]
        if args.h is not None and not any(abs(h - x) <= 1e-12 for x in args.h):
            continue
        if args.only is not None and not any(part in entry["case"] for part in args.only):
            continue
        params = (entry["sigma"], entry["steps"], entry["selected"], entry["epochs"], entry["delta"])
        live = peer is not None and (args.peer == "live" or entry["seconds"] <= args.live_max_seconds)
        theirs = run_dp_accounting(peer, *params, h) if live else {
            k: entry[k] for k in ("epsilon_lower", "epsilon_upper", "width", "seconds")}
        theirs["source"] = "live" if live else "recorded"
        if live:
            theirs["recorded_difference"] = max(abs(theirs["epsilon_lower"] - entry["epsilon_lower"]),
                                                abs(theirs["epsilon_upper"] - entry["epsilon_upper"]))
        runs = [("h", {"value_discretization_interval": h})]
        if not args.no_target_width:
            runs.append(("target_width", {"target_width": theirs["width"]}))
        row = {"case": entry["case"], "delta": entry["delta"], "value_discretization_interval": h,
               "dp_accounting": theirs}
        for label, mode in runs:
            ours = run_dpkit(*params, **mode)
            ours["mode"] = mode
            ours.update(compare(ours, theirs, h))
            ours["time_ratio_peer_over_dpkit"] = theirs["seconds"] / ours["seconds"]
            row[f"dpkit_{label}"] = ours
        if args.json:
            print(json.dumps(row), flush=True)
            continue
        print(f"\n{entry['case']} delta={entry['delta']:g} h={h:g}")
        note = f"  (recorded - live: {theirs['recorded_difference']:.1e})" if live else " (recorded)"
        print(f"  dp_accounting          eps in {_interval(theirs['epsilon_lower'], theirs['epsilon_upper'])}"
              f"  {theirs['seconds']:8.2f} s{note}")
        for label, mode in runs:
            ours = row[f"dpkit_{label}"]
            name = f"dpkit h={h:g}" if label == "h" else f"dpkit width={theirs['width']:.2g}"
            if "error" in ours:
                print(f"  {name:22s} failed: {ours['error']}")
                continue
            checks = ("contained " + ("yes" if ours["contained"] else "NO") + ", overlaps "
                      + ("yes" if ours["overlaps"] else "NO")) if "contained" in ours else "no lower end"
            missed = ""
            if label == "target_width" and ours["width"] is not None and ours["width"] > theirs["width"]:
                missed = "; target width not reached" + (
                    f" (dpkit stopped at h={ours['h_used']:.3g})" if ours["h_used"] is not None else "")
            print(f"  {name:22s} eps in {_interval(ours['epsilon_lower'], ours['epsilon'])}  {ours['seconds']:8.2f} s"
                  f"  ({ours['time_ratio_peer_over_dpkit']:.2f}x dpkit)  {checks}{missed}", flush=True)


if __name__ == "__main__":
    main()
