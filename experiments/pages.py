"""Helpers shared by the reproduction scripts that (re)write docs/reproductions/00N.md."""

from __future__ import annotations

import json
import pathlib

FLAGS_HEADING = "## The paper's privacy flags and what dpkit does"


def kept_flags_section(page: pathlib.Path) -> list[str]:
    """The hand-written flags section of the existing page (kept when the page is regenerated)."""
    page = pathlib.Path(page)
    if not page.exists():
        return []
    text = page.read_text(encoding="utf-8")
    return ([""] + text[text.index(FLAGS_HEADING):].rstrip("\n").split("\n") + [""]) if FLAGS_HEADING in text else []


def write_page(out: pathlib.Path, lines: list[str], page: pathlib.Path, results: dict,
               results_path: pathlib.Path) -> None:
    """Write the Markdown ``lines`` (plus ``page``'s kept flags section) to ``out`` and ``results`` as JSON."""
    out = pathlib.Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines + kept_flags_section(page)), encoding="utf-8")
    results_path.parent.mkdir(parents=True, exist_ok=True)
    results_path.write_text(json.dumps(results, indent=1, ensure_ascii=False, default=float) + "\n", encoding="utf-8")
    print(out, results_path)
