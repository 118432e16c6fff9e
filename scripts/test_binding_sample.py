"""Draw a seeded random sample of the test functions and measure how many of them bind.

    python scripts/test_binding_sample.py --seed 2 --size 120                # list the sample
    python scripts/test_binding_sample.py --seed 2 --size 120 --show         # ... with each test's source
    python scripts/test_binding_sample.py --seed 2 --size 120 --review tests/binding_review.csv
    python scripts/test_binding_sample.py --at 191a719 --seed 1 --size 120   # the suite as it was at a commit

Every ``def test_*`` at module level or in a ``Test*`` class of a ``tests/**/test_*.py`` file is one test function
(found with ``ast``, so a parametrised or hypothesis test counts once). The sample is
``random.Random(seed).sample(sorted(functions), size)``. ``--review`` reads the classification of each sampled test
from a CSV file with the columns ``seed,test,class,reason`` (the rows of the same seed) and prints the shares:

- ``reference``: checked against an independent truth (closed form, mpmath, a peer library, a Clopper-Pearson bound,
  a value derived by hand);
- ``property``: a binding invariant a wrong implementation fails (monotonicity, composition, round trip, replay
  bit for bit, a refutation of a broken variant);
- ``error-contract``: bad input gets the right error;
- ``weak``: cannot fail in a useful way (self-consistency, shapes only, only runs, a "no witness" result that a
  do-nothing analyser gives too, a tuned tolerance).

The binding share is (reference + property) / (all but error-contract); the second share counts error-contract
tests as binding, over all sampled tests. The method is described in docs/testing.md.
"""

from __future__ import annotations

import argparse
import ast
import csv
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLASSES = ("reference", "property", "error-contract", "weak")


def _sources(commit: str | None) -> dict[str, str]:
    """The text of every ``tests/**/test_*.py`` file, from the work tree or from a commit."""
    if commit is None:
        return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
                for p in sorted((ROOT / "tests").rglob("test_*.py"))}
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", commit, "tests"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    return {name: subprocess.run(["git", "show", f"{commit}:{name}"], cwd=ROOT, check=True, capture_output=True,
                                 text=True).stdout
            for name in sorted(names) if Path(name).name.startswith("test_") and name.endswith(".py")}


def test_functions(commit: str | None = None) -> dict[str, str]:
    """Map ``path::[Class::]name`` of every test function to its source text."""
    found = {}
    for path, text in _sources(commit).items():
        lines = text.splitlines()

        def source(node: ast.AST) -> str:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            return "\n".join(lines[first - 1:node.end_lineno])

        for node in ast.parse(text).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                found[f"{path}::{node.name}"] = source(node)
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test"):
                        found[f"{path}::{node.name}::{item.name}"] = source(item)
    return found


def sample(functions: dict[str, str], seed: int, size: int) -> list[str]:
    """The seeded sample of test ids, in the order drawn."""
    return random.Random(seed).sample(sorted(functions), min(size, len(functions)))


def review(path: Path, seed: int, drawn: list[str]) -> int:
    """Print the shares of the classes among the drawn tests; 1 if a drawn test is not classified."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = {row["test"]: row for row in csv.DictReader(handle) if int(row["seed"]) == seed}
    missing = [test for test in drawn if test not in rows]
    bad = [test for test in drawn if test in rows and rows[test]["class"] not in CLASSES]
    for test in missing:
        print(f"not classified: {test}")
    for test in bad:
        print(f"unknown class {rows[test]['class']!r}: {test}")
    counts = Counter(rows[test]["class"] for test in drawn if test in rows)
    total = sum(counts.values())
    binding = counts["reference"] + counts["property"]
    print(f"seed {seed}: {total} classified of {len(drawn)} drawn; " +
          ", ".join(f"{name} {counts[name]}" for name in CLASSES))
    if total > counts["error-contract"]:
        print(f"binding, error-contract tests left out: {binding}/{total - counts['error-contract']} = "
              f"{binding / (total - counts['error-contract']):.0%}")
    if total:
        print(f"binding, error-contract tests counted as binding: {binding + counts['error-contract']}/{total} = "
              f"{(binding + counts['error-contract']) / total:.0%}")
    for test in drawn:
        if test in rows and rows[test]["class"] == "weak":
            print(f"weak: {test}: {rows[test]['reason']}")
    return 1 if missing or bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=2, help="seed of the sample (default 2)")
    parser.add_argument("--size", type=int, default=120, help="number of test functions drawn (default 120)")
    parser.add_argument("--at", metavar="COMMIT", help="list the tests of this commit instead of the work tree")
    parser.add_argument("--show", action="store_true", help="print the source of each sampled test")
    parser.add_argument("--review", type=Path, metavar="CSV", help="classification file (seed,test,class,reason)")
    args = parser.parse_args(argv)
    functions = test_functions(args.at)
    drawn = sample(functions, args.seed, args.size)
    print(f"{len(functions)} test functions in {len({t.split('::')[0] for t in functions})} files; "
          f"seed {args.seed}, {len(drawn)} drawn")
    for number, test in enumerate(drawn, 1):
        print(f"{number:4d} {test}")
        if args.show:
            print(functions[test], end="\n\n")
    return review(args.review, args.seed, drawn) if args.review else 0


if __name__ == "__main__":
    sys.exit(main())
