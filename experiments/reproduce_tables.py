"""Every private algorithm on the published tables beyond Adult, for the reproduction pages.

Runs ``benchmarks/training.py``'s ``run_table`` (the defaults of ``dpkit train``, corrected variants,
δ = 1e-5) on the twelve tables of :mod:`dpkit.algorithms.substrate.public_tables`, with each run's
private column ranges and with the tables' published ranges, at ε = 1 and 3 over seeds 0–2, and
writes ``experiments/results/tables.json``. Each ``reproduce_00N.py`` then renders its algorithms'
rows as the section "Beyond Adult" of its page (``pages.beyond_adult``); ``--render`` re-renders
that section of every page from the JSON without rerunning the papers' Adult experiments. Runtime ≈
35 minutes of CPU (a-ddp takes most of it; two processes with ``--scaling private`` and
``--scaling public`` halve the wall time, ``--merge`` joins their files). Usage::

    python experiments/reproduce_tables.py [--scaling private public] [--seeds 0 1 2] [--out FILE]
    python experiments/reproduce_tables.py --merge private.json public.json
    python experiments/reproduce_tables.py --algorithms admm-pvp   # re-run one algorithm, replace its rows
    python experiments/reproduce_tables.py --retarget   # recompute the targets from the stored rows
    python experiments/reproduce_tables.py --render
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from pages import FLAGS_HEADING, PAGE_ALGORITHMS, TABLES_RESULTS, beyond_adult, write_atomically  # experiments/pages.py

ROOT = pathlib.Path(__file__).resolve().parents[1]
TABLES = ("fair", "psid7682", "doctorvisits", "healthinsurance", "randhie", "default", "cps1988", "benefits",
          "arrests", "nmes1988", "workinghours", "caravan")
EPSILONS = (1.0, 3.0)


def run(scalings: list[str], seeds: list[int], names: list[str] | None = None) -> dict:
    """``{"seeds": seeds, scaling: [run_table report per table]}`` for ``names`` (None: every private algorithm)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from training import run_table, table_json  # benchmarks/training.py

    from dpkit.algorithms.registry import ALGORITHMS

    names = names or [name for name, spec in ALGORITHMS.items() if spec.private]
    out: dict = {"seeds": seeds}
    for scaling in scalings:
        out[scaling] = [table_json(run_table(table, list(EPSILONS), seeds, names, scaling)) for table in TABLES]
    return out


def replace_rows(results: dict, fresh: dict) -> dict:
    """``results`` with the rows and targets of ``fresh``'s algorithms replaced by ``fresh``'s (the runs
    of ``--algorithms``); the seeds, tables, majority class and logistic regression must be the same."""
    if fresh["seeds"] != results["seeds"]:
        raise ValueError(f"--algorithms: the seeds ({fresh['seeds']}) differ from the file's ({results['seeds']})")
    merged = json.loads(json.dumps(results))
    for scaling in (key for key in fresh if key != "seeds"):
        old = {table["table"]: table for table in merged[scaling]}
        for table in fresh[scaling]:
            kept = old[table["table"]]
            if (kept["majority"], kept["logistic"]) != (table["majority"], table["logistic"]):
                raise ValueError(f"--algorithms: {table['table']} ({scaling}) has another split or baseline than the file")
            kept["rows"].update(table["rows"])
            kept["targets"].update(table["targets"])
    return merged


def retarget(results: dict) -> dict:
    """``results`` with every table's targets recomputed from its stored rows by ``table_targets`` (after a
    change of the targets' rules; no run is repeated)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from training import table_targets  # benchmarks/training.py

    fresh = json.loads(json.dumps(results))
    for scaling in (key for key in fresh if key != "seeds"):
        for table in fresh[scaling]:
            table["targets"] = {name: table_targets(table, {float(e): run for e, run in runs.items()})
                                for name, runs in table["rows"].items()}
    return fresh


def render() -> None:
    """Replace the section "Beyond Adult" of every reproduction page by the one rendered from the JSON."""
    for page, algorithms in PAGE_ALGORITHMS.items():
        path = ROOT / "docs" / "reproductions" / f"{page}.md"
        text = path.read_text(encoding="utf-8")
        section = "\n".join(beyond_adult(algorithms))
        start = text.find("\n## Beyond Adult: published tables")
        end = text.find("\n" + FLAGS_HEADING)
        if end < 0:
            raise ValueError(f"{path} has no {FLAGS_HEADING!r} section to put the tables before")
        head = text[:start] if 0 <= start < end else text[:end]
        write_atomically(path, head.rstrip("\n") + "\n" + section + "\n" + text[end:])
        print(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scaling", nargs="+", choices=("private", "public"), default=["private", "public"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", default=str(TABLES_RESULTS), help="the JSON to write (default: results/tables.json)")
    parser.add_argument("--merge", nargs=2, metavar=("PRIVATE", "PUBLIC"),
                        help="join the files of a --scaling private and a --scaling public run into --out")
    parser.add_argument("--render", action="store_true", help="re-render the pages' sections from --out")
    parser.add_argument("--algorithms", nargs="+", metavar="NAME",
                        help="re-run these algorithms only and replace their rows in --out")
    parser.add_argument("--retarget", action="store_true",
                        help="recompute the targets of --out from its stored rows (no runs)")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    if args.render:
        render()
        return
    if args.merge:
        first, second = (json.loads(pathlib.Path(p).read_text(encoding="utf-8")) for p in args.merge)
        if first["seeds"] != second["seeds"]:
            raise ValueError(f"--merge: the files ran different seeds ({first['seeds']} and {second['seeds']})")
        results = {"seeds": first["seeds"], "private": first["private"], "public": second["public"]}
    elif args.retarget:
        results = retarget(json.loads(out.read_text(encoding="utf-8")))
    elif args.algorithms:
        results = replace_rows(json.loads(out.read_text(encoding="utf-8")),
                               run(args.scaling, args.seeds, args.algorithms))
    else:
        results = run(args.scaling, args.seeds)
    write_atomically(out, json.dumps(results, indent=1) + "\n")
    print(out)


if __name__ == "__main__":
    main()
