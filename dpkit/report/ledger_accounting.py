"""A document's privacy ledger, rebuilt as an event, and its accounting under every accountant.

All privacy numbers come from :mod:`dpkit.accounting`; this module only rebuilds the ledger from
the document and asks each accountant (PLD with its certified interval).
"""

from __future__ import annotations

import contextvars
from typing import Any, Mapping, Sequence

import numpy as np

from dpkit.accounting.base import UnsupportedEventError
from dpkit.accounting.events import (ParallelComposedEvent, PrivacyEvent, SelfComposedEvent, compose,
                                     event_from_dict, repeat)
from dpkit.accounting.registry import make_accountant
from dpkit.accounting.tightest import TightestAccountant
from dpkit.report.document import Document

#: Accountants tried on every ledger, in the order they are shown.
ACCOUNTANTS = ("rdp", "zcdp", "pld", "gdp", "analytic", "approx")

#: Points of the privacy-profile grid and of the ε-against-steps curve.
PROFILE_POINTS = 41
STEP_POINTS = 8


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


def failure_reason(error: BaseException) -> str:
    """Why an accountant was skipped, in one short line (never the repr of the whole ledger)."""
    if isinstance(error, UnsupportedEventError):
        return f"{type(error.event).__name__} is not supported: {error.reason}"
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text if len(text) <= 200 else text[:197] + "..."


PLD_TARGET_WIDTH: contextvars.ContextVar[float | None] = contextvars.ContextVar("PLD_TARGET_WIDTH", default=None)
"""The PLD's ``target_width`` for the profiles (``dpkit report --target-width``); ``None``: its default."""


def _accountant(name: str, relation: str, event: PrivacyEvent):
    width = PLD_TARGET_WIDTH.get()
    extra = {"target_width": width} if name == "pld" and width is not None else {}
    accountant = make_accountant(name, neighbouring=relation, **extra)
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
            skipped[name] = failure_reason(error)
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
            skipped[f"{name} profile"] = failure_reason(error)
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
            skipped[f"{name} steps"] = failure_reason(error)
    return {"steps": step_counts, "epsilon": epsilons, "delta": delta}
