"""Build a reproducibility report (a JSON-ready dict) from dpkit's JSON documents.

For each document the report states the privacy unit and neighbouring relation, every
parameter, the document's own numbers (labelled as the paper's analysis or dpkit's corrected
one), ε at the document's δ and the whole privacy profile δ(ε) under every accountant that
supports the ledger (PLD with its certified interval), ε against the number of steps, the audit's
lower bound and verdict, the software versions, the seed and the configuration hash, and —
if asked — whether re-executing the document's ``argv`` reproduces its numbers.

A ``train`` document (``TrainingResult.to_dict()``) is read as: the variant, the guarantee the
tightest accountant certified over the run's ledger (record-level, under the ledger's
neighbouring relation), the paper's own claim (labelled as such, with its validity), further
named guarantees, the accuracy beside the majority class, and the ledger per group of agents.
The report rebuilds the ledger's event — the parallel composition over the groups of agents,
who hold disjoint records — and recomputes the certified ε with the same tightest accountant,
and ε under every single accountant that supports it.

Every string of the report is freed of the reader's absolute directories
(:mod:`~dpkit.report.local_paths`). The parts live beside it: :mod:`~dpkit.report.ledger_accounting` (the ledger and every
accountant's numbers), :mod:`~dpkit.report.summaries` (the document's own numbers),
:mod:`~dpkit.report.rerun` (re-executing the recorded command) and
:mod:`~dpkit.report.baselines` (the non-private baseline); this module assembles them.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from dpkit.accounting.base import UnsupportedEventError
from dpkit.commands.provenance import config_hash, environment
from dpkit.report import bibliography
from dpkit.report.baselines import baseline_key, nonprivate_history
from dpkit.report.document import Document
from dpkit.report.ledger_accounting import (
    account,
    certify,
    failure_reason,
    train_groups,
)
from dpkit.report.rerun import RERUN_RTOL, relative_difference, rerun_check, same_value
from dpkit.report.local_paths import display_path, redact
from dpkit.report.sandbox import RerunPolicy
from dpkit.report.summaries import analyses, audit_summary, train_summary

#: δ at which ε is tabulated for documents whose own δ is 0 (pure DP).
PURE_DP_DELTA = 1e-6

UNIT_TEXT = {
    "add-remove": "one record; neighbouring datasets differ by adding or removing that record",
    "replace-one": "one record; neighbouring datasets differ by replacing that record with another",
}


# ---------------------------------------------------------------------------------------------
# The report


def privacy_unit(doc: Document, relation: str) -> str:
    base = UNIT_TEXT.get(relation, relation)
    if _nonprivate(doc):
        return "none: a non-private run (no privacy guarantee)"
    if doc.command == "train":
        return (f"{base}, in one agent's local data (agents hold disjoint records: the run's guarantee is the "
                "parallel composition over agents, i.e. the worst group of agents)")
    if doc.command == "audit":
        if doc.payload.get("relation"):  # the command's own statement of its neighbouring relation
            return f"the audit's neighbouring input pairs: {doc.payload['relation']}"
        pairs = doc.payload.get("pairs")
        return f"the audit's neighbouring input pairs ({pairs or 'per mechanism'} patterns)"
    return base


#: What reading a field of the wrong type or shape raises: from a checked document, the document's fault.
MALFORMED = (KeyError, AttributeError, TypeError, IndexError, ValueError, ArithmeticError, RecursionError)


def malformed(source: str, error: BaseException) -> ValueError:
    """The one-line error for a document whose fields a report cannot read."""
    text = str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
    return ValueError(f"{display_path(source)}: a malformed document: {text.splitlines()[0] if text else ''} (a field "
                      f"the report reads is missing, out of range or of the wrong type)")


def document_report(doc: Document, rerun: bool = True, baselines: dict[str, dict] | None = None,
                    policy: RerunPolicy | None = None) -> dict[str, Any]:
    """The report section of one document (JSON-ready).

    ``baselines`` maps :func:`baseline_key` to non-private runs already seen (filled by
    non-private ``train`` documents, used by private ones instead of a new baseline run);
    ``policy`` is what reruns may do (default: built-in code only).

    Raises
    ------
    ValueError
        The document has a field of the wrong type or shape (one line naming the document).
    """
    try:
        return _document_report(doc, rerun, {} if baselines is None else baselines, policy)
    except MALFORMED as error:
        raise malformed(doc.source, error) from None


def _document_report(doc: Document, rerun: bool, baselines: dict[str, dict],
                     policy: RerunPolicy | None) -> dict[str, Any]:
    payload = doc.payload
    entry: dict[str, Any] = {
        "source": display_path(doc.source),
        "command": doc.command,
        "argv": doc.argv,
        "parameters": dict(doc.config),
        "config_hash": doc.config_hash,
        "config_hash_valid": doc.config_hash_valid,
        "environment": dict(doc.envelope.get("environment", {})),
        "seed": doc.config.get("seed"),
        "notes": list(payload.get("notes", [])),
        "result": _result_fields(doc),
    }
    entry["rerun"] = {"performed": False, "matched": None, "fields": []}  # the rerun comes last, so that a
    accountings: list[Mapping] = []
    events: list[Mapping] = []
    algorithms: list[str] = []
    datasets: list[str | None] = []
    audits: list[Mapping] = []
    if doc.command == "audit":
        entry["audit"] = audit_summary(doc)
        entry["neighbouring"] = None
        entry["privacy_unit"] = privacy_unit(doc, "")
        audits.append({**payload, "mechanism_name": doc.config.get("mechanism")})
    elif doc.command == "dpsgd":  # its own statement: the accountants ran in the command (and in the rerun)
        entry["neighbouring"] = "add-remove"
        entry["privacy_unit"] = privacy_unit(doc, "add-remove") + (
            f"; user-level rows: a user contributes at most {payload['max_examples_per_user']} examples"
            if payload.get("max_examples_per_user") else "")
        entry["analyses"] = analyses(doc)
        accountings += [a for a in entry["analyses"] if a.get("references")]
        events.append({"kind": "poisson_sampled", "rate": float(payload["sampling_rate"]),
                       "event": {"kind": "gaussian", "sigma": float(payload["noise_multiplier"]), "sensitivity": 1.0}})
    else:
        delta = 0.0 if payload["delta"] is None else float(payload["delta"])  # None: a non-private run
        shown_delta = delta if 0.0 < delta < 1.0 else PURE_DP_DELTA
        accounting = account(doc, shown_delta)
        if shown_delta != delta and accounting["at_delta"]:
            accounting["notes"].append(f"the document's delta is {delta:g}; the accountants' epsilon is shown at "
                                       f"delta = {shown_delta:g} (the privacy profile covers every delta)")
        if doc.command == "train" and len(accounting["units"]) > 1 and accounting["at_delta"]:
            accounting["notes"].append("each accountant's row is its answer for the worst group of agents (parallel "
                                       "composition over disjoint data, McSherry 2009, Thm 4)")
        if doc.command == "train":
            entry["train"] = train_summary(doc)
            entry["certified"] = {"document": payload["guarantee"], "report": None}
            if payload["guarantee"] is not None:
                try:
                    entry["certified"]["report"] = recomputed = certify(doc, float(payload["guarantee"]["delta"]))
                except (UnsupportedEventError, ValueError, ArithmeticError, TypeError) as error:
                    entry["certified"]["error"] = failure_reason(error)
                    recomputed = None
            else:
                recomputed = None
            if recomputed is not None:
                accountings.append(recomputed)
        entry["accounting"] = accounting
        entry["neighbouring"] = None if _nonprivate(doc) else accounting["neighbouring"]
        entry["privacy_unit"] = privacy_unit(doc, accounting["neighbouring"])
        entry["analyses"] = analyses(doc)
        accountings += accounting["at_delta"] + [a for a in entry["analyses"] if a.get("references")]
        if doc.command == "train":
            algorithms.append(payload["algorithm"])
            datasets.append(payload["config"].get("data"))
            events += [e for _, items in train_groups(doc) for e, _ in items]
        else:
            events.append(payload["event"])
        entry["consistency"] = _consistency(doc, accounting, entry.get("certified"))
    entry["references"] = bibliography.keys_for(accountings=accountings, events=events, algorithms=algorithms,
                                                audits=audits, datasets=datasets)
    again = None  # malformed document is refused before any child process runs
    if rerun:
        entry["rerun"], again = rerun_check(doc, policy)
    if doc.command == "train":
        entry["training"] = _training(doc, again, baselines, policy)
    return entry


def _result_fields(doc: Document) -> dict[str, Any]:
    """The headline result of the document, beside its parameters."""
    p = doc.payload
    if doc.command == "calibrate":
        return {f"calibrated {p['parameter_name']}": p["parameter"], "target epsilon": p.get("target_epsilon"),
                "calibration method": p.get("calibration_method")}
    if doc.command == "epsilon":
        return {"privacy event": p["event"]}
    if doc.command == "dpsgd":
        return {"DP-SGD": f"{p['examples']} examples, {p['batch']} per batch, {p['epochs']:g} epochs, "
                          f"{p['steps']} steps at sampling rate {p['sampling_rate']:.6g}",
                "noise multiplier": p["noise_multiplier"], "microbatching": p.get("microbatching"),
                "delta": p["delta"]}
    if doc.command == "train":
        guarantee, claim, config = p["guarantee"], p["paper_claim"], p["config"]
        fields = {"algorithm": p["algorithm"], "variant": p["variant"], "data": config.get("data"),
                  "test accuracy": p["accuracy"], "majority-class accuracy": config.get("majority_accuracy")}
        if guarantee is None:
            fields["certified epsilon"] = "none: a non-private run (no privacy guarantee)"
        else:
            fields["certified epsilon (record-level)"] = guarantee["epsilon"]
            fields["delta"] = guarantee["delta"]
            fields["certified by"] = f"the {guarantee['accountant']} accountant (tightest over the run's ledger)"
        if claim is not None:
            fields["paper's claim: epsilon"] = claim.get("epsilon")
            fields["paper's claim: valid bound"] = claim.get("valid")
        for name, extra in p["extra_guarantees"].items():
            fields[f"extra guarantee {name}: epsilon"] = extra.get("epsilon")
        return fields
    return {"epsilon lower bound": p["epsilon_lower_bound"], "violation": p["violation"]}


def _training(doc: Document, again: Mapping | None, baselines: dict[str, dict],
              policy: RerunPolicy | None) -> dict[str, Any]:
    payload = doc.payload
    history = payload.get("history")
    source = "document"
    if history is None and again is not None:
        history, source = again.get("_full", {}).get("history"), "rerun"
    key = baseline_key(doc)
    private = not _nonprivate(doc)
    if not private:
        if history is not None:
            baselines[key] = {"accuracy": payload["accuracy"], "history": history, "argv": doc.argv}
        baseline, how = None, ""
    elif key in baselines:
        baseline = baselines[key]
        how = " ".join(arg for arg in baseline["argv"] if arg not in ("--json", "--quiet"))
    else:
        baseline, how = (None, "") if history is None else nonprivate_history(doc, policy)
    return {"accuracy": payload["accuracy"], "history": history, "private": private, "history_source": source if history else None,
            "nonprivate": baseline, "nonprivate_argv": how}


def _row(scope: str, name: str | None, document: Any, report: Any, same_accountant: bool = True) -> dict[str, Any]:
    return {"scope": scope, "accountant": name, "document": document, "report": report,
            "identical": same_accountant and document == report,
            "matched": same_accountant and same_value(document, report),
            "difference": relative_difference(document, report), "rtol": RERUN_RTOL}


def _consistency(doc: Document, accounting: Mapping, certified: Mapping | None = None) -> list[dict[str, Any]]:
    """The document's own ε against the report's recomputation under the same accountant.

    For ``train``: the document's guarantee against the tightest accountant rerun on the
    ledger rebuilt from the document (same accountant, same ε, same ledger hash), and, when the
    ledger is one group of agents, against the same accountant's row of the accountant table.
    """
    rows = []
    if doc.command == "train":
        if not certified or certified["document"] is None:
            return rows
        ours, theirs = certified["report"], certified["document"]
        same = ours is not None and ours["accountant"] == theirs["accountant"]
        row = _row("tightest accountant over the rebuilt ledger", theirs["accountant"], theirs["epsilon"],
                   None if ours is None else ours["epsilon"], same)
        row["report_accountant"] = None if ours is None else ours["accountant"]
        row["ledger_hash_identical"] = ours is not None and ours.get("ledger_hash") == theirs.get("ledger_hash")
        row["matched"] = row["matched"] and row["ledger_hash_identical"]
        rows.append(row)
        match = [r for r in accounting["at_delta"] if r["accountant"] == theirs["accountant"]]
        if len(accounting.get("units", [])) == 1 and match:
            rows.append(_row("accountant table", theirs["accountant"], theirs["epsilon"], match[0]["epsilon"]))
        return rows
    for analysis in analyses(doc):
        name = analysis.get("accountant")
        match = [r for r in accounting["at_delta"] if r["accountant"] == name]
        if match and analysis.get("epsilon") is not None:
            rows.append(_row("accountant table", name, analysis["epsilon"], match[0]["epsilon"]))
    return rows


def _nonprivate(doc: Document) -> bool:
    """A train document without a guarantee and without privacy events (variant ``non-private``)."""
    if doc.command != "train":
        return False
    return doc.payload["guarantee"] is None and not any(items for _, items in train_groups(doc))


def build_report(documents: Sequence[Document], rerun: bool = True, policy: RerunPolicy | None = None) -> dict[str, Any]:
    """The whole report (JSON-ready): one section per document, the references, the environment.
    Reruns (if ``rerun``) follow ``policy`` (default: built-in code only)."""
    baselines: dict[str, dict] = {}
    # non-private runs first, so private runs on the same split reuse them as their baseline
    order = sorted(range(len(documents)), key=lambda i: not _nonprivate(documents[i]))
    built = {i: document_report(documents[i], rerun, baselines, policy) for i in order}
    sections = [built[i] for i in range(len(documents))]
    keys = sorted({key for s in sections for key in s["references"]})
    reruns = [s["rerun"]["matched"] for s in sections if s["rerun"]["performed"]]
    return redact({  # no absolute path of the reader's machine in a report
        "title": "dpkit reproducibility report",
        "environment": environment(),
        "documents": sections,
        "references": keys,
        "rerun_matched": (all(reruns) if reruns else None),
        "report_hash": config_hash({"documents": [d.config_hash for d in documents]}),
    })
