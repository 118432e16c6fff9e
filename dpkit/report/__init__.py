"""Reproducibility reports: provenance, Markdown/JSON/BibTeX reports and plots from dpkit's JSON outputs.

:func:`write_report` is the entry point (used by ``dpkit report`` and ``dpkit demo``): it reads
the JSON documents that ``dpkit epsilon|calibrate|train|audit --json`` print, reruns them if
asked, and writes ``report.md``, ``report.json``, ``references.bib`` and PNG plots into a
directory.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from dpkit.report.bibliography import keys_for, render_bibtex
from dpkit.report.document import Document, as_document, load_document

__all__ = ["Document", "ReportResult", "build_report", "keys_for", "load_document", "render_bibtex", "write_report"]


@dataclass(frozen=True)
class ReportResult:
    """Where a report was written and what it says at a glance.

    Attributes
    ----------
    out_dir, markdown, json, bibtex
        The directory and the three text files.
    plots
        Plot name → PNG path.
    skipped_plots
        Plot name → why it was not drawn.
    rerun_matched
        True if every rerun reproduced its document's numbers, False if one did not, None if
        no rerun was performed.
    references
        The BibTeX keys cited.
    report
        The report itself (the content of ``report.json``).
    """

    out_dir: Path
    markdown: Path
    json: Path
    bibtex: Path
    plots: dict[str, Path] = field(default_factory=dict)
    skipped_plots: dict[str, str] = field(default_factory=dict)
    rerun_matched: bool | None = None
    references: tuple[str, ...] = ()
    report: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (paths as strings; the report body is in ``report.json``)."""
        return {
            "out_dir": str(self.out_dir),
            "markdown": str(self.markdown),
            "json": str(self.json),
            "bibtex": str(self.bibtex),
            "plots": {name: str(path) for name, path in self.plots.items()},
            "skipped_plots": dict(self.skipped_plots),
            "rerun_matched": self.rerun_matched,
            "references": list(self.references),
        }


def _finite(value: Any) -> Any:
    """``value`` with non-finite floats written as the strings "inf", "-inf", "nan" (strict JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def build_report(documents: Iterable[Any], rerun: bool = True) -> dict[str, Any]:
    """The report (JSON-ready) of ``documents`` (paths, parsed JSON dicts or :class:`Document`)."""
    from dpkit.report.builder import build_report as _build

    return _build([as_document(d) for d in documents], rerun=rerun)


def write_report(
    documents: Iterable[Any],
    out_dir: str | Path,
    rerun: bool = True,
    *,
    overwrite: bool = False,
    plots: bool = True,
) -> ReportResult:
    """Write ``report.md``, ``report.json``, ``references.bib`` and PNG plots into ``out_dir``.

    Parameters
    ----------
    documents
        The JSON documents printed by ``dpkit epsilon|calibrate|train|audit --json``: paths,
        parsed dicts or :class:`Document` objects (at least one).
    out_dir
        Directory to write into; created if missing. An existing non-empty directory is
        refused unless ``overwrite`` (a user's files are never replaced silently).
    rerun
        Re-execute each document's command and state whether its numbers are reproduced.
    overwrite
        Allow writing into a non-empty directory (files of the same name are replaced).
    plots
        Draw the PNG plots (needs matplotlib, the ``plot`` extra).

    Raises
    ------
    ValueError
        No documents, an unreadable document, or a non-empty ``out_dir`` without ``overwrite``.
    """
    docs = [as_document(d) for d in documents]
    if not docs:
        raise ValueError("documents must contain at least one dpkit JSON document")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out_dir {str(out)!r} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise ValueError(f"out_dir {str(out)!r} is not empty; choose a new directory or allow overwriting (--force)")
    from dpkit.report.builder import build_report as _build
    from dpkit.report.markdown import render_markdown

    report = _build(docs, rerun=rerun)
    out.mkdir(parents=True, exist_ok=True)
    drawn: dict[str, str] = {}
    skipped: dict[str, str] = {}
    if plots:
        from dpkit.report.plots import write_plots

        drawn, skipped = write_plots(report, out)
    else:
        skipped = {"all plots": "disabled"}
    report["plots"] = dict(drawn)
    report["skipped_plots"] = dict(skipped)
    paths = {"markdown": out / "report.md", "json": out / "report.json", "bibtex": out / "references.bib"}
    paths["markdown"].write_text(render_markdown(report, drawn, skipped), encoding="utf-8")
    paths["json"].write_text(json.dumps(_finite(report), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    paths["bibtex"].write_text(render_bibtex(report["references"]), encoding="utf-8")
    return ReportResult(
        out_dir=out,
        markdown=paths["markdown"],
        json=paths["json"],
        bibtex=paths["bibtex"],
        plots={name: out / filename for name, filename in drawn.items()},
        skipped_plots=skipped,
        rerun_matched=report["rerun_matched"],
        references=tuple(report["references"]),
        report=report,
    )
