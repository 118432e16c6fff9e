"""Helpers shared by the reproduction scripts that (re)write docs/reproductions/00N.md."""

from __future__ import annotations

import pathlib

FLAGS_HEADING = "## The paper's privacy flags and what dpkit does"


def kept_flags_section(page: pathlib.Path) -> list[str]:
    """The hand-written flags section of the existing page (kept when the page is regenerated)."""
    page = pathlib.Path(page)
    if not page.exists():
        return []
    text = page.read_text(encoding="utf-8")
    return ([""] + text[text.index(FLAGS_HEADING):].rstrip("\n").split("\n") + [""]) if FLAGS_HEADING in text else []
