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
from dpkit.accounting.events import (ParallelComposedEvent, PrivacyEvent, SelfComposedEvent, compose,
                                     event_from_dict, repeat)
from dpkit.accounting.registry import make_accountant
from dpkit.accounting.tightest import TightestAccountant
from dpkit.commands.provenance import canonical_json, config_hash, environment
from dpkit.commands.runner import run_json
from dpkit.report import bibliography
from dpkit.report.document import Document

#: Accountants tried on every ledger, in the order they are shown.
ACCOUNTANTS = ("rdp", "zcdp", "pld", "gdp", "analytic", "approx")

#: Points of the privacy-profile grid and of the ε-against-steps curve.
PROFILE_POINTS = 41
STEP_POINTS = 8

#: The numbers a rerun must reproduce, per command.
RERUN_FIELDS: dict[str, tuple[str, ...]] = {
    "epsilon": ("epsilon", "epsilon_lower"),
    "calibrate": ("parameter", "epsilon"),
    "train": ("accuracy", "agent_accuracies", "iterations", "epsilon_corrected", "guarantee.accountant",
              "guarantee.ledger_hash", "epsilon_paper", "paper_claim.valid"),
    "audit": ("epsilon_lower_bound", "violation", "p_value"),
}

#: δ at which ε is tabulated for documents whose own δ is 0 (pure DP).
PURE_DP_DELTA = 1e-6

#: Relative tolerance under which rerun numbers count as reproduced (exact equality is reported too).
RERUN_RTOL = 1e-9

UNIT_TEXT = {
    "add-remove": "one record; neighbouring datasets differ by adding or removing that record",
    "replace-one": "one record; neighbouring datasets differ by replacing that record with another",
}


# ---------------------------------------------------------------------------------------------
# The ledger of a document


def _compose_items(items: Sequence[tuple[dict, int]]) -> tuple[PrivacyEvent | None, list[str]]:
    """The sequential composition of ``(event dict, count)`` entries, built as the run's ledger builds it."""
    if not items:
        return None, ["no privacy events"]
    parts = [event_from_dict(e) if c == 1 else repeat(event_from_dict(e), int(c)) for e, c in items]
    return (parts[0] if len(parts) == 1 else compose(*parts)), []


def _unwrapped(event: dict, count: int) -> tuple[dict, int]:
    """``(self_composed(e, n), c)`` as ``(e, n c)``, so that steps are counted as steps."""
    while event.get("kind") == "self_composed":
        event, count = event["event"], count * int(event["count"])
    return event, count


def train_groups(doc: Document) -> list[tuple[list[int], list[tuple[dict, int]]]]:
    """The ledger's groups: (agents with identical entries, [(event dict, count), ...] in time order)."""
    return [([int(a) for a in group["agents"]], [(dict(e), int(c)) for e, c in group["events"]])
            for group in doc.payload["ledger"]["groups"]]


def _train_units(doc: Document) -> list[tuple[str, list[tuple[dict, int]]]]:
    """Per group of agents that released something: (label, its entries)."""
    return [(f"agents {agents}", items) for agents, items in train_groups(doc) if items]


def ledger_event(doc: Document) -> PrivacyEvent | None:
    """The run's whole privacy event, rebuilt from the serialised ledger.

    Agents hold disjoint records, so the run is the parallel composition (McSherry 2009, Thm 4)
    of each group's sequential composition (None for a run that released nothing).
    """
    distinct: list[PrivacyEvent] = []
    for _, items in _train_units(doc):
        event, _ = _compose_items(items)
        if event is not None and event not in distinct:
            distinct.append(event)
    if not distinct:
        return None
    return distinct[0] if len(distinct) == 1 else ParallelComposedEvent(tuple(distinct))


def certify(doc: Document, delta: float) -> dict[str, Any] | None:
    """The report's own certified ε of a train document: the tightest accountant over the rebuilt ledger."""
    event = ledger_event(doc)
    if event is None:
        return None
    return TightestAccountant(_relation(doc)).compose(event).get_epsilon(delta).to_dict()


def _relation(doc: Document) -> str:
    payload = doc.payload
    if doc.command == "train":
        if payload["ledger"].get("neighbouring"):
            return str(payload["ledger"]["neighbouring"])
        guarantee = payload.get("guarantee")
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
            steps_items = [_unwrapped(e, c) for e, c in items]
            total = sum(c for _, c in steps_items)
            steps = _step_grid(total) if total else []
            step_events = [(k, whole if k == total else _compose_items(_prefix(steps_items, k))[0]) for k in steps]
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


def _reason(error: BaseException) -> str:
    """Why an accountant was skipped, in one short line (never the repr of the whole ledger)."""
    if isinstance(error, UnsupportedEventError):
        return f"{type(error.event).__name__} is not supported: {error.reason}"
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _accountant(name: str, relation: str, event: PrivacyEvent):
    accountant = make_accountant(name, neighbouring=relation)
    if not accountant.supports(event):
        raise UnsupportedEventError(event, f"the {name} accountant does not support this ledger")
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
            skipped[name] = _reason(error)
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
            skipped[f"{name} profile"] = _reason(error)
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
            skipped[f"{name} steps"] = _reason(error)
    return {"steps": step_counts, "epsilon": epsilons, "delta": delta}


# ---------------------------------------------------------------------------------------------
# The document's own numbers


RESULT_KEYS = ("epsilon", "delta", "accountant", "neighbouring", "method", "is_upper_bound", "epsilon_lower", "notes",
               "references")


def analyses(doc: Document) -> list[dict[str, Any]]:
    """The document's privacy numbers, each labelled by its role.

    ``certified``: an accountant's upper bound (for ``train``, the tightest accountant over the
    run's ledger); ``paper claim``: the paper's own claim for the run, which may not be a valid
    bound (``valid`` says); ``extra guarantee``: a further accountant result of a train run,
    labelled by its name (e.g. ``label_only``).
    """
    payload = doc.payload
    if doc.command == "train":
        rows = []
        guarantee = payload["guarantee"]
        if guarantee is not None:
            rows.append({"analysis": "guarantee", "role": "certified", **{k: guarantee.get(k) for k in RESULT_KEYS}})
        claim = payload["paper_claim"]
        if claim is not None:
            rows.append({"analysis": "paper_claim", "role": "paper claim", "epsilon": claim.get("epsilon"),
                         "delta": claim.get("delta"), "accountant": None, "method": claim.get("rule"),
                         "valid": claim.get("valid"), "notes": list(claim.get("notes") or []), "references": []})
        for name, extra in payload["extra_guarantees"].items():
            rows.append({"analysis": name, "role": "extra guarantee", **{k: extra.get(k) for k in RESULT_KEYS}})
        return rows
    if doc.command == "epsilon" and "results" in payload:
        return [{"analysis": r["accountant"], "role": "certified", **r} for r in payload["results"]]
    if doc.command in ("epsilon", "calibrate"):
        return [{"analysis": "reported", "role": "certified", **{k: payload.get(k) for k in RESULT_KEYS}}]
    return []


_EVENT_NAMES = {
    "gaussian": "Gaussian", "laplace": "Laplace", "discrete_gaussian": "discrete Gaussian",
    "discrete_laplace": "discrete Laplace", "randomized_response": "randomized response", "pure_dp": "pure DP",
    "approx_dp": "approximate DP", "zcdp": "zCDP", "objective_perturbation": "objective perturbation",
    "exponential_mechanism": "exponential mechanism", "sparse_vector": "sparse vector",
}


def describe_event(event: Mapping[str, Any]) -> str:
    """One readable line of a serialised privacy event.

    >>> describe_event({"kind": "gaussian", "sigma": 2.0, "sensitivity": 0.5})
    'Gaussian(sigma=2, sensitivity=0.5)'
    >>> describe_event({"kind": "self_composed", "count": 3, "event": {"kind": "laplace", "scale": 1.0, "sensitivity": 1.0}})
    '3 x Laplace(scale=1, sensitivity=1)'
    """
    kind = str(event.get("kind"))
    if kind == "self_composed":
        return f"{event['count']} x {describe_event(event['event'])}"
    if kind in ("composed", "parallel_composed"):
        joiner = " then " if kind == "composed" else " | "
        return "(" + joiner.join(describe_event(e) for e in event["events"]) + ")"
    if kind in ("poisson_sampled", "sampled_without_replacement"):
        inner = describe_event(event["event"])
        if kind == "poisson_sampled":
            return f"{inner} on a Poisson subsample (rate {event['rate']:g})"
        return f"{inner} on {event['sample_size']} of {event['population_size']} records (without replacement)"
    params = []
    for key, value in event.items():
        if key == "kind":
            continue
        params.append(f"{key}={value:.6g}" if isinstance(value, float) else f"{key}={value}")
    return f"{_EVENT_NAMES.get(kind, kind)}({', '.join(params)})"


def ledger_summary(doc: Document) -> list[dict[str, Any]]:
    """The ledger per group of agents (agents with identical entries): its events, counts and releases."""
    return [{"agents": agents, "releases": sum(c for _, c in items),
             "events": [{"event": e, "count": c, "description": describe_event(e)} for e, c in items]}
            for agents, items in train_groups(doc)]


#: Provenance fields of a train run's data and targets (``config`` of the train document).
DATA_FIELDS = ("data", "seed", "n_train", "n_test", "dimension", "agents", "iterations", "epsilon_target",
               "delta_target", "majority_accuracy")


def train_summary(doc: Document) -> dict[str, Any]:
    """What a train document says: variant, certified ε, the paper's claim, extras, accuracy, data, ledger."""
    p = doc.payload
    config = p["config"]
    return {
        "algorithm": p["algorithm"],
        "variant": p["variant"],
        "private": p["guarantee"] is not None,
        "certified": p["guarantee"],
        "paper_claim": p["paper_claim"],
        "extra_guarantees": dict(p["extra_guarantees"]),
        "accuracy": p["accuracy"],
        "majority_accuracy": config.get("majority_accuracy"),
        "agent_accuracies": list(p.get("agent_accuracies") or []),
        "data": {key: config.get(key) for key in DATA_FIELDS if key in config},
        "ledger": ledger_summary(doc),
        "neighbouring": p["ledger"].get("neighbouring"),
    }


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


#: Commands a report reruns; ``report`` and ``demo`` (which write files) are never rerun.
RERUNNABLE = ("epsilon", "calibrate", "train", "audit")

#: Options whose value is a path dpkit writes to: removed from a recorded argv (exact spelling
#: only; the parser refuses abbreviations) and refused if they survive.
WRITING_OPTIONS = ("out",)


def _strip_out(argv: Sequence[str]) -> list[str]:
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in tuple(f"--{o}" for o in WRITING_OPTIONS):
            skip = True
            continue
        if arg.startswith(tuple(f"--{o}=" for o in WRITING_OPTIONS)):
            continue
        out.append(arg)
    return out


def checked_argv(argv: Sequence[str], command: str | None = None) -> tuple[list[str], Any]:
    """The argv a rerun executes, and its parsed options, after the safety checks.

    ``argv[0]`` must be ``command`` (the document's recorded command) and one of
    :data:`RERUNNABLE`; write options (``--out``) are removed, and the rest must parse with
    the current command line and leave no option that writes.

    Raises
    ------
    ValueError
        The argv names another command, ``report``/``demo``, an option that writes, or does
        not parse (the parser's own message).
    """
    from dpkit.commands.runner import parse

    argv = list(argv)
    if not argv:
        raise ValueError("the document records an empty argv")
    if command is not None and argv[0] != command:
        raise ValueError(f"the document's argv runs {argv[0]!r} but its command is {command!r}; refusing to rerun it")
    if argv[0] not in RERUNNABLE:
        raise ValueError(f"a report reruns only {', '.join(RERUNNABLE)}, not {argv[0]!r}")
    argv = _strip_out(argv)
    args = parse(argv)  # CommandError (a ValueError) with the parser's message
    if args.command != argv[0]:
        raise ValueError(f"the document's argv runs {args.command!r}, not {argv[0]!r}; refusing to rerun it")
    for option in WRITING_OPTIONS:
        if getattr(args, option, None) is not None:
            raise ValueError(f"the document's argv writes a file (--{option}); refusing to rerun it")
    return argv, args


def code_to_import(argv: Sequence[str]) -> list[str]:
    """The importable modules a rerun of ``argv`` would import and run (``audit --mechanism module:function``)."""
    try:
        _, args = checked_argv(argv)
    except ValueError:
        return []
    mechanism = getattr(args, "mechanism", None)
    if args.command == "audit" and isinstance(mechanism, str) and ":" in mechanism:
        return [mechanism]
    return []


def run_argv(argv: Sequence[str], command: str | None = None) -> dict[str, Any]:
    """Execute ``dpkit <argv>`` in-process and return its JSON object (``train`` also its full result).

    ``argv`` goes through :func:`checked_argv` first; the only file written is ``train``'s full
    result, into a private temporary directory.
    """
    argv, _ = checked_argv(argv, command)
    with tempfile.TemporaryDirectory() as tmp:
        full_path = os.path.join(tmp, "full.json")
        if argv[0] == "train":
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


def _difference(original: Any, new: Any) -> float | None:
    """``new - original`` for two finite numbers (``None`` otherwise)."""
    if isinstance(original, bool) or isinstance(new, bool):
        return None
    if isinstance(original, (int, float)) and isinstance(new, (int, float)) and math.isfinite(original) \
            and math.isfinite(new):
        return float(new) - float(original)
    return None


def _field(payload: Mapping[str, Any], name: str) -> tuple[bool, Any]:
    """``payload["a"]["b"]`` for ``name = "a.b"``: (present, value); a missing or null parent gives (True, None)
    when the top-level key exists (a non-private run has ``guarantee: null``)."""
    head, _, rest = name.partition(".")
    if head not in payload:
        return False, None
    value = payload[head]
    for part in rest.split(".") if rest else ():
        value = value.get(part) if isinstance(value, Mapping) else None
    return True, value


def rerun_check(doc: Document) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Re-execute the document's argv; compare its numbers and configuration hash.

    ``matched`` says whether the numbers were reproduced; ``config_hash_matched`` whether the
    rerun's full configuration (defaults included) is the same, and ``config_differences`` lists
    the options that differ (e.g. an option a newer dpkit added, with its default).
    Returns the check (JSON-ready) and the rerun's JSON object (``None`` if it failed).
    """
    start = time.perf_counter()
    try:
        again = run_argv(doc.argv, doc.command)
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
        present_before, original = _field(doc.payload, name)
        present_after, new = _field(again, name)
        if not present_before and not present_after:
            continue
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


def nonprivate_history(doc: Document) -> tuple[dict[str, Any] | None, str]:
    """Training history of the non-private ``admm`` baseline on the same data, agents, iterations and seed."""
    argv = ["train", "--algorithm", "admm"]
    for option, value in baseline_options(doc).items():
        if value is not None:
            argv.append(f"--{option.replace('_', '-')}={value}")
    try:
        result = run_argv(argv, "train")
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
        return (f"{base}, in one agent's local data (agents hold disjoint records: the run's guarantee is the "
                "parallel composition over agents, i.e. the worst group of agents)")
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
    datasets: list[str | None] = []
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
                    entry["certified"]["error"] = _reason(error)
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
            entry["training"] = _training(doc, again, baselines)
        else:
            events.append(payload["event"])
        entry["consistency"] = _consistency(doc, accounting, entry.get("certified"))
    entry["references"] = bibliography.keys_for(accountings=accountings, events=events, algorithms=algorithms,
                                                audits=audits, datasets=datasets)
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


def _training(doc: Document, again: Mapping | None, baselines: dict[str, dict]) -> dict[str, Any]:
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
        baseline, how = (None, "") if history is None else nonprivate_history(doc)
    return {"accuracy": payload["accuracy"], "history": history, "private": private, "history_source": source if history else None,
            "nonprivate": baseline, "nonprivate_argv": how}


def _row(scope: str, name: str | None, document: Any, report: Any, same_accountant: bool = True) -> dict[str, Any]:
    return {"scope": scope, "accountant": name, "document": document, "report": report,
            "identical": same_accountant and document == report,
            "matched": same_accountant and _same(document, report),
            "difference": _difference(document, report), "rtol": RERUN_RTOL}


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
