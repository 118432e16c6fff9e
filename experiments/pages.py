"""Helpers shared by the reproduction scripts that (re)write docs/reproductions/00N.md."""

from __future__ import annotations

import json
import os
import pathlib
import tempfile

import numpy as np

FLAGS_HEADING = "## The paper's privacy flags and what dpkit does"
TABLES_RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "tables.json"
"""The runs of ``experiments/reproduce_tables.py`` (every private algorithm on the published tables)."""
PAGE_ALGORITHMS = {"000": ["pp-admm", "ipp-admm"], "001": ["hetero-admm"], "002": ["a-ddp"], "003": ["dvp-admm"],
                   "004": ["dp-admm", "admm-pvp"]}
"""The algorithms of each reproduction page (docs/reproductions/00N.md), the rows of its section :func:`beyond_adult`."""


def kept_flags_section(page: pathlib.Path) -> list[str]:
    """The hand-written flags section of the existing page (kept when the page is regenerated)."""
    page = pathlib.Path(page)
    if not page.exists():
        return []
    text = page.read_text(encoding="utf-8")
    return ([""] + text[text.index(FLAGS_HEADING):].rstrip("\n").split("\n") + [""]) if FLAGS_HEADING in text else []


def ms(values) -> str:
    """``mean ± sample std`` of ``values`` to four decimals."""
    v = np.asarray(values, float)
    return f"{v.mean():.4f} ± {v.std(ddof=1) if len(v) > 1 else 0.0:.4f}"


def write_atomically(path: pathlib.Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.replace(temporary, path)


def _cell(table: dict, algorithm: str) -> str:
    """``mean ± sd`` at ε = 1, the share of the margin recovered where target (b) applies, and ✗ for a
    miss, as ``benchmarks/training.py``'s ``table_targets`` judged them (stored in the JSON)."""
    at_one = np.asarray(table["rows"][algorithm]["1.0"]["accuracy"], float)
    targets = table["targets"][algorithm]
    text = f"{at_one.mean():.3f} ± {at_one.std():.3f}"
    if targets["recovered"] is not None:
        share = f"{targets['recovered']:.0%}"
        if targets["margin_miss"] and share == "50%":  # a miss must not read as the threshold
            share = f"{targets['recovered']:.2%}"
        text += f" ({share}{' ✗ b' if targets['margin_miss'] else ''})"
    return text + "".join(f" ✗ a at ε = {e:g}" for e in targets["floor_misses"])


def beyond_adult(algorithms: list[str], results_path: pathlib.Path = TABLES_RESULTS) -> list[str]:
    """The section "Beyond Adult" of a reproduction page: ``algorithms`` on the published tables of
    ``results_path`` (written by ``experiments/reproduce_tables.py``), with private and published column
    ranges; empty when the file is absent."""
    path = pathlib.Path(results_path)
    if not path.exists():
        return []
    runs = json.loads(path.read_text(encoding="utf-8"))
    private, public = ({t["table"]: t for t in runs[scaling]} for scaling in ("private", "public"))
    header = "| table (n, d) | majority | non-private LR | " + " | ".join(
        f"`{a}`, {label}" for a in algorithms for label in ("private ranges", "published ranges")) + " |"
    lines = ["", "## Beyond Adult: published tables", "",
             "Produced by `python experiments/reproduce_tables.py` (the runs of `benchmarks/training.py --tables`): "
             "test accuracy at ε = 1 (δ = 1e-5, corrected variant, dpkit's defaults; mean ± sd over the seeds "
             f"{', '.join(str(s) for s in runs['seeds'])}), each run reading the raw table with column ranges estimated "
             "privately from its training rows and charged to its ε (the default for a user's file), or with the "
             "table's published ranges. Targets on any binary table with n ≥ 3,000: (a) at ε = 1 and 3 the mean is at "
             "most 1 point below the majority class; (b) where non-private logistic regression beats the majority "
             "by ≥ 5 points, it recovers ≥ 50 % of that margin at ε = 1 (the percentage; ✗ marks a miss). The majority "
             "class and the logistic regression are those of the published-range table on the same split "
             "(`docs/algorithms.md`, \"Defaults that travel\", has every algorithm).", "",
             header, "|---|---|---|" + "---|" * (2 * len(algorithms))]
    for name, table in private.items():
        row = [f"{name} ({table['n']:,}, {table['d']})", f"{table['majority']:.3f}", f"{table['logistic']:.3f}"]
        row += [_cell(scaled[name], a) for a in algorithms for scaled in (private, public)]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def write_page(out: pathlib.Path, lines: list[str], page: pathlib.Path, results: dict,
               results_path: pathlib.Path, algorithms: list[str] | None = None) -> None:
    """Write the Markdown ``lines`` (then the section :func:`beyond_adult` of ``algorithms``, then ``page``'s
    kept flags section) to ``out`` and ``results`` as JSON."""
    out = pathlib.Path(out)
    tables = beyond_adult(algorithms) if algorithms else []
    while tables and lines and not lines[-1]:  # one blank line before the section, as its re-rendering leaves
        lines = lines[:-1]
    write_atomically(out, "\n".join(lines + tables + kept_flags_section(page)))
    write_atomically(pathlib.Path(results_path), json.dumps(results, indent=1, ensure_ascii=False, default=float) + "\n")
    print(out, results_path)
