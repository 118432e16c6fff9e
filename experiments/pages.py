"""Helpers shared by the reproduction scripts that (re)write docs/reproductions/00N.md."""

from __future__ import annotations

import json
import os
import pathlib
import tempfile

import numpy as np

FLAGS_HEADING = "## The paper's privacy flags and what dpkit does"


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


def _write_atomically(path: pathlib.Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.replace(temporary, path)


def write_page(out: pathlib.Path, lines: list[str], page: pathlib.Path, results: dict,
               results_path: pathlib.Path) -> None:
    """Write the Markdown ``lines`` (plus ``page``'s kept flags section) to ``out`` and ``results`` as JSON."""
    out = pathlib.Path(out)
    _write_atomically(out, "\n".join(lines + kept_flags_section(page)))
    _write_atomically(pathlib.Path(results_path), json.dumps(results, indent=1, ensure_ascii=False, default=float) + "\n")
    print(out, results_path)
