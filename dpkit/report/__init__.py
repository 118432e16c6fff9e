"""Reproducibility reports: provenance, Markdown/JSON/BibTeX reports and plots from dpkit's JSON outputs.

:func:`write_report` is the entry point (used by ``dpkit report`` and ``dpkit demo``): it reads
the JSON documents that ``dpkit epsilon|calibrate|train|audit|dpsgd --json`` print, reruns them if
asked, and writes ``report.md``, ``report.json``, ``references.bib`` and PNG plots into a
directory.
"""

from dpkit.report.bibliography import keys_for, render_bibtex
from dpkit.report.document import Document, load_document
from dpkit.report.sandbox import RerunPolicy
from dpkit.report.writer import ReportResult, build_report, check_out_dir, write_report

__all__ = ["Document", "ReportResult", "RerunPolicy", "build_report", "check_out_dir", "keys_for", "load_document",
           "render_bibtex", "write_report"]
