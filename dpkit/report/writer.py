"""Write a report folder: build the report from documents, render it, and install it in one step.

:func:`write_report` reads the JSON documents that ``dpkit epsilon|calibrate|train|audit|dpsgd
--json`` print, reruns them if asked, renders ``report.md``, ``report.json``, ``references.bib``
and PNG plots into a fresh temporary folder, and installs that folder at ``out_dir`` through
:mod:`dpkit.commands.files` (never over an existing path unless ``overwrite``).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from dpkit.commands import strict_json
from dpkit.commands.files import install_folder, new_temp_folder
from dpkit.report.bibliography import render_bibtex
from dpkit.report.builder import MALFORMED, build_report as _build
from dpkit.report.document import as_document
from dpkit.report.markdown import render_markdown
from dpkit.report.plots import PLOT_FILES, write_plots
from dpkit.report.sandbox import RerunPolicy

__all__ = ["ReportResult", "build_report", "check_out_dir", "write_report"]


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
            "reruns_skipped": [{"source": section["source"], "modules": section["rerun"]["skipped"],
                                "allow": section["rerun"]["allow"]}
                               for section in self.report.get("documents", []) if section["rerun"].get("skipped")],
            "references": list(self.references),
        }


def build_report(documents: Iterable[Any], rerun: bool = True, *, policy: RerunPolicy | None = None) -> dict[str, Any]:
    """The report (JSON-ready) of ``documents`` (paths, parsed JSON dicts or :class:`Document`);
    reruns follow ``policy`` (default: built-in code only, see :class:`RerunPolicy`)."""
    return _build([as_document(d) for d in documents], rerun=rerun, policy=policy)


REPORT_FILES = {"markdown": "report.md", "json": "report.json", "bibtex": "references.bib"}
"""The text files of a report."""

PLOT_EXTRA_HINT = "matplotlib is not installed; install the plot extra for PNG plots: pip install 'dpkit[plot]'"
"""Why plots are missing when matplotlib is not installed (the report is written without them)."""


def _report_file(name: str) -> bool:
    """Whether ``name`` is a file a report writes (text files, plots, ``docN_`` plots)."""
    return name in REPORT_FILES.values() or re.sub(r"^doc\d+_", "", name) in PLOT_FILES.values()


def check_out_dir(out_dir: str | Path, overwrite: bool = False) -> Path:
    """Check, before any slow work, that a report can be written to ``out_dir``.

    ``out_dir`` must be a new or empty directory whose nearest existing ancestor is a writable
    directory; with ``overwrite`` it may also be a report folder (holding only a report's own
    files: ``overwrite`` replaces the folder as a whole, so a user's other files are never in it).

    Raises
    ------
    ValueError
        ``out_dir`` is a file, is not empty without ``overwrite``, holds files that are not a
        report's, or lies under a file.
    PermissionError
        The directory that would hold it is not writable (the error names it).
    """
    out = Path(out_dir)
    if out.exists() or out.is_symlink():
        if not out.is_dir():
            raise ValueError(f"out_dir {str(out)!r} exists and is not a directory")
        names = sorted(entry.name for entry in out.iterdir())
        if names and not overwrite:
            raise ValueError(f"out_dir {str(out)!r} is not empty; choose a new directory or allow overwriting (--force)")
        foreign = [name for name in names if not _report_file(name)]
        if foreign:  # --force replaces the folder as a whole: only ever a report's own files
            raise ValueError(f"out_dir {str(out)!r} holds files that are not a dpkit report's ({foreign[0]!r}"
                             f"{f' and {len(foreign) - 1} more' if len(foreign) > 1 else ''}); --force replaces only "
                             "a report folder: choose a new directory")
        target = out
    else:
        target = out.absolute().parent
        while not target.exists():
            target = target.parent
        if not target.is_dir():
            raise ValueError(f"out_dir {str(out)!r} cannot be created: {str(target)!r} is not a directory")
    if not os.access(target, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, "Permission denied (not writable)", str(target))
    return out


def write_report(
    documents: Iterable[Any],
    out_dir: str | Path,
    rerun: bool = True,
    *,
    overwrite: bool = False,
    plots: bool = True,
    policy: RerunPolicy | None = None,
) -> ReportResult:
    """Write ``report.md``, ``report.json``, ``references.bib`` and PNG plots into ``out_dir``.

    The files are written into a temporary folder beside ``out_dir`` (``.dpkit-tmp-<pid>-...``)
    and renamed onto ``out_dir`` at the end (see :mod:`dpkit.commands.files`), so ``out_dir``
    never holds a half-written report; of concurrent writers to the same new directory exactly
    one succeeds, the others fail with a ``FileExistsError`` that names it. Files and folders
    follow the umask.

    Parameters
    ----------
    documents
        The JSON documents printed by ``dpkit epsilon|calibrate|train|audit|dpsgd --json``: paths,
        parsed dicts or :class:`Document` objects (at least one).
    out_dir
        Directory to write into; created (with its parents) if missing. An existing non-empty
        directory is refused unless ``overwrite`` (a user's files are never replaced silently).
    rerun
        Re-execute each document's command, in a child process, and state whether its numbers
        are reproduced. A document can run only the command it records (never ``report`` or
        ``demo``), no option that writes a file, and code it names (``audit --mechanism
        module:function``) only if ``policy`` trusts the module; other reruns are skipped and
        the report says how to allow them (see :mod:`dpkit.report.sandbox`).
    overwrite
        Replace an existing report folder (one holding only a report's files; any other file
        is refused) as a whole: the new report folder is swapped in
        atomically and the old folder, with every file in it, is removed. A kill leaves the old
        report or the new one, never a mix.
    plots
        Draw the PNG plots (needs matplotlib, the ``plot`` extra; without it the report is
        written without plots and ``skipped_plots`` says why).
    policy
        What reruns may do: trusted modules, where to import them from, the time limit
        (default :class:`RerunPolicy()`: built-in code only, 600 s).

    Raises
    ------
    ValueError
        No documents, an unreadable document, or a non-empty ``out_dir`` without ``overwrite``.
    OSError
        ``out_dir`` cannot be written (the error names the path), or another writer created it
        first (``FileExistsError``).
    """
    docs = [as_document(d) for d in documents]
    if not docs:
        raise ValueError("documents must contain at least one dpkit JSON document")
    out = check_out_dir(out_dir, overwrite)
    report = _build(docs, rerun=rerun, policy=policy)
    out.absolute().parent.mkdir(parents=True, exist_ok=True)
    tmp = new_temp_folder(out)
    try:
        try:
            drawn, skipped = _render(report, tmp, plots)
        except MALFORMED as error:
            raise ValueError(f"cannot write the report: a document is malformed ({type(error).__name__}: "
                             f"{(str(error).splitlines() or [''])[0]})") from None
        except OSError as error:  # a full disk reports no file name: name the report folder
            if error.filename is not None:
                raise
            raise type(error)(error.errno, f"{error.strerror or error} (no report was written)", os.fspath(out)) from None
        install_folder(tmp, out, force=overwrite)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return ReportResult(
        out_dir=out,
        markdown=out / REPORT_FILES["markdown"],
        json=out / REPORT_FILES["json"],
        bibtex=out / REPORT_FILES["bibtex"],
        plots={name: out / filename for name, filename in drawn.items()},
        skipped_plots=skipped,
        rerun_matched=report["rerun_matched"],
        references=tuple(report["references"]),
        report=report,
    )


def _render(report: dict[str, Any], tmp: Path, plots: bool) -> tuple[dict[str, str], dict[str, str]]:
    """Write the plots, ``report.md``, ``report.json`` and ``references.bib`` of ``report`` into ``tmp``."""
    drawn: dict[str, str] = {}
    skipped: dict[str, str] = {}
    if plots:
        try:
            drawn, skipped = write_plots(report, tmp)
        except ImportError:
            for name in drawn:
                (tmp / drawn[name]).unlink(missing_ok=True)
            drawn, skipped = {}, {"all plots": PLOT_EXTRA_HINT}
    else:
        skipped = {"all plots": "disabled"}
    report["plots"] = dict(drawn)
    report["skipped_plots"] = dict(skipped)
    (tmp / REPORT_FILES["markdown"]).write_text(render_markdown(report, drawn, skipped), encoding="utf-8")
    (tmp / REPORT_FILES["json"]).write_text(strict_json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (tmp / REPORT_FILES["bibtex"]).write_text(render_bibtex(report["references"]), encoding="utf-8")
    return drawn, skipped
