"""The non-private baseline a private training run is compared with (same data, agents, rounds, seed)."""

from __future__ import annotations

from typing import Any

from dpkit.commands.provenance import canonical_json
from dpkit.report.document import Document
from dpkit.report.rerun import run_argv
from dpkit.report.sandbox import RerunPolicy

BASELINE_OPTIONS = ("data", "encoding", "agents", "iterations", "seed", "n_train", "graph", "edges")


def baseline_options(doc: Document) -> dict[str, Any]:
    """The baseline options of a train document: its command line's, with the run's agents and
    iterations where the command line left them to the algorithm's default."""
    options = {option: doc.config.get(option) for option in BASELINE_OPTIONS}
    if options["agents"] is None:
        options["agents"] = doc.payload.get("config", {}).get("agents")
    if options["iterations"] is None:
        options["iterations"] = doc.payload.get("iterations")
    return options


def baseline_key(doc: Document) -> str:
    """Identifies runs on the same data split, agents, iterations, graph and seed."""
    return canonical_json(baseline_options(doc))


def nonprivate_history(doc: Document, policy: RerunPolicy | None = None) -> tuple[dict[str, Any] | None, str]:
    """Training history of the non-private ``admm`` baseline on the same data, agents, iterations and seed
    (run like a rerun, under ``policy``)."""
    argv = ["train", "--algorithm", "admm"]
    for option, value in baseline_options(doc).items():
        if value is not None:
            argv.append(f"--{option.replace('_', '-')}={value}")
    try:
        result = run_argv(argv, "train", policy)
    except Exception as error:  # noqa: BLE001  (a failed baseline never stops the report)
        return None, f"non-private baseline failed: {(str(error).splitlines() or [type(error).__name__])[0]}"
    full = result.get("_full", {})
    return {"accuracy": result.get("accuracy"), "history": full.get("history"), "argv": argv}, " ".join(argv)
