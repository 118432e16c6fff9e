"""Build a reproducibility report (a JSON-ready dict) from dpkit's JSON documents.

For each document the report states the privacy unit and neighbouring relation, every
parameter, the document's own numbers (labelled as the paper's analysis or dpkit's corrected
one), ε at the document's δ and the whole privacy profile δ(ε) under every accountant that
supports the ledger (PLD with its certified interval), ε against the number of steps, the audit's
lower bound and verdict, the software versions, the seed and the configuration hash, and —
if asked — whether re-executing the document's ``argv`` reproduces its numbers.

All privacy numbers come from :mod:`dpkit.accounting`; this module only rebuilds the
ledger from the document and asks each accountant.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from typing import Any, Mapping, Sequence

import numpy as np

from dpkit.accounting.base import UnsupportedEventError
from dpkit.accounting.events import ComposedEvent, PrivacyEvent, SelfComposedEvent, event_from_dict
from dpkit.accounting.registry import make_accountant
from dpkit.report import bibliography
from dpkit.report.document import Document
from dpkit.report.provenance import canonical_json, config_hash, environment

#: Accountants tried on every ledger, in the order they are shown.
ACCOUNTANTS = ("rdp", "zcdp", "pld", "gdp", "analytic", "approx")

#: Points of the privacy-profile grid and of the ε-against-steps curve.
PROFILE_POINTS = 41
STEP_POINTS = 8

#: The numbers a rerun must reproduce, per command.
RERUN_FIELDS: dict[str, tuple[str, ...]] = {
    "epsilon": ("epsilon", "epsilon_lower"),
    "calibrate": ("parameter", "epsilon"),
    "train": ("accuracy", "epsilon_corrected", "epsilon_paper"),
    "audit": ("epsilon_lower_bound", "violation", "p_value"),
}

#: δ at which ε is tabulated for documents whose own δ is 0 (pure DP).
PURE_DP_DELTA = 1e-6

#: Relative tolerance under which rerun numbers count as reproduced (exact equality is reported too).
RERUN_RTOL = 1e-9

#: Accountant names used in documents that denote one of :data:`ACCOUNTANTS`.
ACCOUNTANT_ALIASES = {"gdp-exact": "gdp"}

UNIT_TEXT = {
    "add-remove": "one record; neighbouring datasets differ by adding or removing that record",
    "replace-one": "one record; neighbouring datasets differ by replacing that record with another",
}


# ---------------------------------------------------------------------------------------------
# The ledger of a document


def _compose_items(items: Sequence[tuple[dict, int]]) -> tuple[PrivacyEvent | None, list[str]]:
    if not items:
        return None, ["no privacy events"]
    events = [event_from_dict(e) if c == 1 else SelfComposedEvent(event_from_dict(e), c) for e, c in items]
    return (events[0] if len(events) == 1 else ComposedEvent(tuple(events))), []


def _unwrapped(event: dict, count: int) -> tuple[dict, int]:
    """``(self_composed(e, n), c)`` as ``(e, n c)``, so that steps are counted as steps."""
    while event.get("kind") == "self_composed":
        event, count = event["event"], count * int(event["count"])
    return event, count


def _train_units(doc: Document) -> list[tuple[str, list[tuple[dict, int]]]]:
    """Per distinct agent ledger: (agents it applies to, [(event dict, count), ...]) in time order."""
    per_agent: dict[int, list[tuple[dict, int]]] = {}
    for group in doc.payload["ledger"]:
        for agent in group.get("agents", [0]):
            per_agent.setdefault(int(agent), []).extend(_unwrapped(e, int(c)) for e, c in group.get("events", []))
    distinct: dict[str, tuple[list[int], list[tuple[dict, int]]]] = {}
    for agent, items in sorted(per_agent.items()):
        key = canonical_json([[e, c] for e, c in items])
        distinct.setdefault(key, ([], items))[0].append(agent)
    return [(f"agents {agents}", items) for agents, items in distinct.values()]


def _relation(doc: Document) -> str:
    payload = doc.payload
    if doc.command == "train":
        for key in ("corrected", "per_iteration", "paper", "zcdp"):
            guarantee = payload["guarantees"].get(key)
            if isinstance(guarantee, Mapping) and guarantee.get("neighbouring"):
                return str(guarantee["neighbouring"])
        return "replace-one"
    if payload.get("neighbouring"):
        return str(payload["neighbouring"])
    for result in payload.get("results", []):
        return str(result["neighbouring"])
    if doc.config.get("neighbouring"):
        return str(doc.config["neighbouring"])
    return "replace-one" if doc.config.get("sampling") == "without-replacement" else "add-remove"


Unit = tuple[str, "PrivacyEvent | None", list[tuple[int, "PrivacyEvent | None"]]]


def ledger_units(doc: Document) -> tuple[list[Unit], list[str]]:
    """The privacy units of a document: ``(label, whole event, [(k, event of the first k steps)])`` and notes.

    The step counts k follow a geometric grid of ``STEP_POINTS`` points (for ε against steps);
    the last one is the whole run.
    """
    notes: list[str] = []
    if doc.command in ("epsilon", "calibrate"):
        event = event_from_dict(doc.payload["event"])
        if isinstance(event, SelfComposedEvent):
            steps = _step_grid(event.count)
            step_events = [event.event if k == 1 else SelfComposedEvent(event.event, k) for k in steps]
        else:
            steps, step_events = [1], [event]
        return [("the whole run", event, list(zip(steps, step_events)))], notes
    if doc.command == "train":
        units = []
        for label, items in _train_units(doc):
            whole, unit_notes = _compose_items(items)
            notes.extend(unit_notes)
            total = sum(c for _, c in items)
            steps = _step_grid(total) if total else []
            step_events = [(k, _compose_items(_prefix(items, k))[0]) for k in steps]
            units.append((label, whole, step_events))
        return units, sorted(set(notes))
    return [], notes


def _prefix(items: Sequence[tuple[dict, int]], k: int) -> list[tuple[dict, int]]:
    """The first ``k`` steps of a ledger given as (event, count) in time order."""
    out: list[tuple[dict, int]] = []
    for event, count in items:
        if k <= 0:
            break
        out.append((event, min(count, k)))
        k -= count
    return out


def _step_grid(total: int) -> list[int]:
    return sorted({int(round(k)) for k in np.geomspace(1, max(total, 1), STEP_POINTS)} | {max(total, 1)})


# ---------------------------------------------------------------------------------------------
# Accounting under every accountant


def _accountant(name: str, relation: str, event: PrivacyEvent):
    accountant = make_accountant(name, neighbouring=relation)
    if not accountant.supports(event):
        raise UnsupportedEventError(event, f"{name} does not support this ledger")
    accountant.compose(event)
    return accountant


def account(doc: Document, delta: float) -> dict[str, Any]:
    """ε(δ), the privacy profile δ(ε) and ε against steps under every supporting accountant."""
    units, notes = ledger_units(doc)
    relation = _relation(doc)
    events = [whole for _, whole, _ in units if whole is not None]
    at_delta: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    accountants: dict[str, list] = {}
    if not events:
        return {"neighbouring": relation, "delta": delta, "at_delta": [], "skipped": {"all": "no privacy events"},
                "profile": None, "steps": None, "notes": notes, "units": [u[0] for u in units]}
    for name in ACCOUNTANTS:
        try:
            built = [_accountant(name, relation, e) for e in events]
            results = [a.get_epsilon(delta) for a in built]
        except (UnsupportedEventError, ValueError, ArithmeticError) as error:
            skipped[name] = str(error).splitlines()[0][:200]
            continue
        worst = max(range(len(results)), key=lambda i: results[i].epsilon)
        accountants[name] = built
        row = results[worst].to_dict()
        row["unit"] = units[worst][0]
        at_delta.append(row)
    profile = _profile(accountants, at_delta, skipped)
    steps = _steps(units, relation, delta, list(accountants), skipped)
    if not at_delta:
        notes.append("no accountant supports this ledger; only the document's own analyses are shown")
    return {"neighbouring": relation, "delta": delta, "at_delta": at_delta, "skipped": skipped,
            "profile": profile, "steps": steps, "notes": notes, "units": [u[0] for u in units]}


def _profile(accountants: Mapping[str, list], at_delta: list[dict], skipped: dict[str, str]) -> dict[str, Any] | None:
    if not at_delta:
        return None
    tightest = min(row["epsilon"] for row in at_delta)
    eps_max = min(max(2.5 * tightest, 0.5), 50.0)
    grid = np.linspace(0.0, eps_max, PROFILE_POINTS)
    deltas: dict[str, list[float]] = {}
    pld_lower = None
    for name, built in accountants.items():
        try:
            if name == "pld":
                upper = np.max([a.delta_curve(grid, pessimistic=True) for a in built], axis=0)
                pld_lower = np.max([a.delta_curve(grid, pessimistic=False) for a in built], axis=0).tolist()
                deltas[name] = upper.tolist()
            else:
                deltas[name] = [max(a.get_delta(float(x)).delta for a in built) for x in grid]
        except (ValueError, ArithmeticError) as error:
            skipped[f"{name} profile"] = str(error).splitlines()[0][:200]
    return {"epsilons": grid.tolist(), "deltas": deltas, "pld_lower": pld_lower,
            "note": "delta(epsilon) upper bounds of the worst privacy unit; pld_lower is PLD's certified lower bound"}


def _steps(units, relation: str, delta: float, names: Sequence[str], skipped: dict[str, str]) -> dict[str, Any] | None:
    if not units or not units[0][2]:
        return None
    step_counts = [k for k, _ in units[0][2]]
    epsilons: dict[str, list[float]] = {}
    for name in names:
        try:
            curve = []
            for i in range(len(step_counts)):
                curve.append(max(_accountant(name, relation, u[2][i][1]).get_epsilon(delta).epsilon
                                 for u in units if u[2][i][1] is not None))
            epsilons[name] = curve
        except (UnsupportedEventError, ValueError, ArithmeticError, IndexError) as error:
            skipped[f"{name} steps"] = str(error).splitlines()[0][:200]
    return {"steps": step_counts, "epsilon": epsilons, "delta": delta}


# ---------------------------------------------------------------------------------------------
# The document's own numbers


def analyses(doc: Document) -> list[dict[str, Any]]:
    """The document's privacy numbers, each labelled ``paper`` (the paper's analysis) or ``corrected``."""
    payload = doc.payload
    if doc.command == "train":
        rows = []
        for key, guarantee in payload["guarantees"].items():
            if not isinstance(guarantee, Mapping):
                rows.append({"analysis": key, "role": "paper" if key.startswith("paper") else "corrected",
                             "epsilon": None, "delta": None, "accountant": None,
                             "method": "not available (see the document's notes)"})
                continue
            role = "paper" if key in ("paper", "per_iteration") or "paper" in str(guarantee.get("accountant")) else "corrected"
            rows.append({"analysis": key, "role": role, **{k: guarantee.get(k) for k in (
                "epsilon", "delta", "accountant", "neighbouring", "method", "is_upper_bound", "epsilon_lower", "notes")}})
        return rows
    if doc.command == "epsilon" and "results" in payload:
        return [{"analysis": r["accountant"], "role": "corrected", **r} for r in payload["results"]]
    if doc.command in ("epsilon", "calibrate"):
        keys = ("epsilon", "delta", "accountant", "neighbouring", "method", "is_upper_bound", "epsilon_lower", "notes")
        return [{"analysis": "reported", "role": "corrected", **{k: payload.get(k) for k in keys}}]
    return []


def audit_summary(doc: Document) -> dict[str, Any]:
    """The audit's lower bound, confidence, samples and verdict, with the witness' probabilities."""
    p = doc.payload
    confidence = p["confidence"]
    if p["violation"]:
        verdict = (f"VIOLATION: the claim epsilon={p['claimed_epsilon']:g}, delta={p['claimed_delta']:g} is "
                   f"contradicted (epsilon >= {p['epsilon_lower_bound']:.4f} with confidence {confidence:g})")
    else:
        verdict = (f"no violation found: the data support epsilon >= {p['epsilon_lower_bound']:.4f} with confidence "
                   f"{confidence:g}, consistent with the claim epsilon={p['claimed_epsilon']:g}")
    witness = p.get("witness") or {}
    summary = {k: p.get(k) for k in ("epsilon_lower_bound", "violation", "p_value", "claimed_epsilon", "claimed_delta",
                                      "confidence", "samples", "seed", "method", "mechanism", "pairs", "candidates")}
    summary["verdict"] = verdict
    summary["notes"] = list(p.get("notes", []))
    if witness:
        n = witness.get("samples_per_input")
        summary["witness"] = {
            "event": witness.get("event"),
            "direction": witness.get("direction"),
            "pair": (witness.get("pair") or {}).get("label"),
            "samples_per_input": n,
            "p_numerator_estimate": witness["count_numerator"] / n if n else None,
            "p_denominator_estimate": witness["count_denominator"] / n if n else None,
            "p_numerator_lower": witness.get("p_numerator_lower"),
            "p_denominator_upper": witness.get("p_denominator_upper"),
        }
    return summary


# ---------------------------------------------------------------------------------------------
# Rerun


def _strip_out(argv: Sequence[str]) -> list[str]:
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "--out":
            skip = True
            continue
        if arg.startswith("--out="):
            continue
        out.append(arg)
    return out


def run_argv(argv: Sequence[str]) -> dict[str, Any]:
    """Execute ``dpkit <argv>`` in-process and return its JSON object (``train`` also its full result)."""
    from dpkit.cli.main import run_json

    argv = _strip_out(argv)
    with tempfile.TemporaryDirectory() as tmp:
        full_path = os.path.join(tmp, "full.json")
        if argv and argv[0] == "train":
            argv += ["--out", full_path]
        try:
            result = run_json(argv)
        except ValueError as error:
            raise ValueError(f"rerun failed: {error}") from None
        if os.path.exists(full_path):
            with open(full_path, encoding="utf-8") as handle:
                result["_full"] = json.load(handle)
    return result


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or math.isclose(a, b, rel_tol=RERUN_RTOL, abs_tol=0.0)
    return a == b


def rerun_check(doc: Document) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Re-execute the document's argv; compare its numbers and configuration hash.

    ``matched`` says whether the numbers were reproduced; ``config_hash_matched`` whether the
    rerun's full configuration (defaults included) is the same, and ``config_differences`` lists
    the options that differ (e.g. an option a newer dpkit added, with its default).
    Returns the check (JSON-ready) and the rerun's JSON object (``None`` if it failed).
    """
    start = time.perf_counter()
    try:
        again = run_argv(doc.argv)
    except (ValueError, TypeError, json.JSONDecodeError) as error:
        return {"performed": True, "matched": False, "error": str(error), "fields": []}, None
    fields = []
    for index, result in enumerate(doc.payload.get("results", [])):  # `dpkit epsilon --compare`
        new = again.get("results", [])[index] if index < len(again.get("results", [])) else {}
        for name in ("accountant", "epsilon", "epsilon_lower"):
            original, value = result.get(name), new.get(name)
            fields.append({"field": f"results[{index}].{name}", "original": original, "rerun": value,
                           "identical": original == value, "matched": _same(original, value)})
    for name in RERUN_FIELDS[doc.command]:
        if name not in doc.payload and name not in again:
            continue
        original, new = doc.payload.get(name), again.get(name)
        fields.append({"field": name, "original": original, "rerun": new, "identical": original == new,
                       "matched": _same(original, new)})
    envelope = again.get("dpkit", {})
    config_again = envelope.get("config", {})
    differences = sorted(key for key in set(doc.config) | set(config_again)
                         if doc.config.get(key, "<absent>") != config_again.get(key, "<absent>"))
    check = {
        "performed": True,
        "argv": _strip_out(doc.argv),
        "config_hash_matched": envelope.get("config_hash") == doc.config_hash,
        "config_differences": {key: [doc.config.get(key, "<absent>"), config_again.get(key, "<absent>")]
                               for key in differences},
        "fields": fields,
        "matched": bool(fields) and all(f["matched"] for f in fields),
        "rtol": RERUN_RTOL,
        "seconds": round(time.perf_counter() - start, 3),
    }
    return check, again


#: Options a non-private baseline shares with the private run it is compared with.
BASELINE_OPTIONS = ("data", "variant", "agents", "iterations", "seed", "n_train")


def baseline_key(config: Mapping[str, Any]) -> str:
    """Identifies runs on the same data split, agents, iterations and seed."""
    return canonical_json({option: config.get(option) for option in BASELINE_OPTIONS})


def nonprivate_history(doc: Document) -> tuple[dict[str, Any] | None, str]:
    """Training history of the non-private ``admm`` baseline on the same data, agents, iterations and seed."""
    config = doc.config
    argv = ["train", "--algorithm", "admm"]
    for option in BASELINE_OPTIONS:
        value = config.get(option)
        if value is not None:
            argv += [f"--{option.replace('_', '-')}", str(value)]
    try:
        result = run_argv(argv)
    except (ValueError, TypeError, json.JSONDecodeError) as error:
        return None, f"non-private baseline failed: {error}"
    full = result.get("_full", {})
    return {"accuracy": result.get("accuracy"), "history": full.get("history"), "argv": argv}, " ".join(argv)


# ---------------------------------------------------------------------------------------------
# The report


def privacy_unit(doc: Document, relation: str) -> str:
    base = UNIT_TEXT.get(relation, relation)
    if _nonprivate(doc):
        return "none: a non-private run (no privacy guarantee)"
    if doc.command == "train":
        return f"{base} in one agent's local data (the worst agent is reported)"
    if doc.command == "audit":
        pairs = doc.payload.get("pairs")
        return f"the audit's neighbouring input pairs ({pairs or 'per mechanism'} patterns)"
    return base


def document_report(doc: Document, rerun: bool = True, baselines: dict[str, dict] | None = None) -> dict[str, Any]:
    """The report section of one document (JSON-ready).

    ``baselines`` maps :func:`baseline_key` to non-private runs already seen (filled by
    non-private ``train`` documents, used by private ones instead of a new baseline run).
    """
    baselines = {} if baselines is None else baselines
    payload = doc.payload
    entry: dict[str, Any] = {
        "source": doc.source,
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
    again = None
    if rerun:
        entry["rerun"], again = rerun_check(doc)
    else:
        entry["rerun"] = {"performed": False, "matched": None, "fields": []}
    accountings: list[Mapping] = []
    events: list[Mapping] = []
    algorithms: list[str] = []
    audits: list[Mapping] = []
    if doc.command == "audit":
        entry["audit"] = audit_summary(doc)
        entry["neighbouring"] = None
        entry["privacy_unit"] = privacy_unit(doc, "")
        audits.append({**payload, "mechanism_name": doc.config.get("mechanism")})
    else:
        delta = 0.0 if payload["delta"] is None else float(payload["delta"])  # None: a non-private run
        shown_delta = delta if 0.0 < delta < 1.0 else PURE_DP_DELTA
        accounting = account(doc, shown_delta)
        if shown_delta != delta and accounting["at_delta"]:
            accounting["notes"].append(f"the document's delta is {delta:g}; the accountants' epsilon is shown at "
                                       f"delta = {shown_delta:g} (the privacy profile covers every delta)")
        if doc.command == "train" and accounting["at_delta"]:
            accounting["notes"].append("the accountant table composes every event of an agent's ledger as spent on one "
                                       "record (an upper bound); the document's corrected analysis can be tighter "
                                       "when the paper's privacy unit is finer")
        entry["accounting"] = accounting
        entry["neighbouring"] = None if _nonprivate(doc) else accounting["neighbouring"]
        entry["privacy_unit"] = privacy_unit(doc, accounting["neighbouring"])
        entry["analyses"] = analyses(doc)
        accountings += accounting["at_delta"] + [a for a in entry["analyses"] if a.get("method")]
        if doc.command == "train":
            algorithms.append(payload["algorithm"])
            events += [e for group in payload["ledger"] for e, _ in group.get("events", [])]
            entry["training"] = _training(doc, again, baselines)
        else:
            events.append(payload["event"])
        entry["consistency"] = _consistency(doc, accounting)
    entry["references"] = bibliography.keys_for(accountings=accountings, events=events, algorithms=algorithms,
                                                audits=audits)
    return entry


def _result_fields(doc: Document) -> dict[str, Any]:
    """The headline result of the document, beside its parameters."""
    p = doc.payload
    if doc.command == "calibrate":
        return {f"calibrated {p['parameter_name']}": p["parameter"], "target epsilon": p.get("target_epsilon"),
                "calibration method": p.get("calibration_method")}
    if doc.command == "epsilon":
        return {"privacy event": p["event"]}
    if doc.command == "train":
        return {"algorithm": p["algorithm"], "test accuracy": p["accuracy"], "epsilon (paper)": p.get("epsilon_paper"),
                "epsilon (corrected)": p.get("epsilon_corrected"), "delta": p["delta"]}
    return {"epsilon lower bound": p["epsilon_lower_bound"], "violation": p["violation"]}


def _training(doc: Document, again: Mapping | None, baselines: dict[str, dict]) -> dict[str, Any]:
    payload = doc.payload
    history = payload.get("history")
    source = "document"
    if history is None and again is not None:
        history, source = again.get("_full", {}).get("history"), "rerun"
    key = baseline_key(doc.config)
    private = any(group.get("events") for group in payload["ledger"])
    if not private:
        if history is not None:
            baselines[key] = {"accuracy": payload["accuracy"], "history": history, "argv": doc.argv}
        baseline, how = None, ""
    elif key in baselines:
        baseline = baselines[key]
        how = " ".join(arg for arg in baseline["argv"] if arg not in ("--json", "--quiet"))
    else:
        baseline, how = (None, "") if history is None else nonprivate_history(doc)
    return {"accuracy": payload["accuracy"], "history": history, "private": private, "history_source": source if history else None,
            "nonprivate": baseline, "nonprivate_argv": how}


def _consistency(doc: Document, accounting: Mapping) -> list[dict[str, Any]]:
    """The document's own ε against the report's recomputation under the same accountant."""
    rows = []
    for analysis in analyses(doc):
        name = ACCOUNTANT_ALIASES.get(analysis.get("accountant"), analysis.get("accountant"))
        match = [r for r in accounting["at_delta"] if r["accountant"] == name]
        if match and analysis.get("epsilon") is not None:
            ours = match[0]["epsilon"]
            rows.append({"accountant": name, "document": analysis["epsilon"], "report": ours,
                         "matched": _same(analysis["epsilon"], ours)})
    return rows


def _nonprivate(doc: Document) -> bool:
    return doc.command == "train" and not any(group.get("events") for group in doc.payload["ledger"])


def build_report(documents: Sequence[Document], rerun: bool = True) -> dict[str, Any]:
    """The whole report (JSON-ready): one section per document, the references, the environment."""
    baselines: dict[str, dict] = {}
    # non-private runs first, so private runs on the same split reuse them as their baseline
    order = sorted(range(len(documents)), key=lambda i: not _nonprivate(documents[i]))
    built = {i: document_report(documents[i], rerun, baselines) for i in order}
    sections = [built[i] for i in range(len(documents))]
    keys = sorted({key for s in sections for key in s["references"]})
    reruns = [s["rerun"]["matched"] for s in sections if s["rerun"]["performed"]]
    return {
        "title": "dpkit reproducibility report",
        "environment": environment(),
        "documents": sections,
        "references": keys,
        "rerun_matched": (all(reruns) if reruns else None),
        "report_hash": config_hash({"documents": [d.config_hash for d in documents]}),
    }
