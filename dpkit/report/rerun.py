"""Rerun a document's recorded command line, safely, and compare the numbers it reproduces.

Only the command a document records is run (never ``report`` or ``demo``), options that write
are removed or refused, and the modules a rerun imports are listed first.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from typing import Any, Mapping, Sequence


from dpkit.commands.runner import parse, run_json
from dpkit.report.document import Document

#: The numbers a rerun must reproduce, per command.
RERUN_FIELDS: dict[str, tuple[str, ...]] = {
    "epsilon": ("epsilon", "epsilon_lower"),
    "calibrate": ("parameter", "epsilon"),
    "train": ("accuracy", "agent_accuracies", "iterations", "epsilon_corrected", "guarantee.accountant",
              "guarantee.ledger_hash", "epsilon_paper", "paper_claim.valid"),
    "audit": ("epsilon_lower_bound", "violation", "p_value"),
}

#: Relative tolerance under which rerun numbers count as reproduced (exact equality is reported too).
RERUN_RTOL = 1e-9


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
    """The importable modules a rerun of ``argv`` would import and run (``audit --mechanism module:function``,
    ``audit --pairs module:NAME``)."""
    try:
        _, args = checked_argv(argv)
    except ValueError:
        return []
    if args.command != "audit":
        return []
    specs = (getattr(args, "mechanism", None), getattr(args, "pairs", None))
    return [spec for spec in specs if isinstance(spec, str) and ":" in spec]


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


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or math.isclose(a, b, rel_tol=RERUN_RTOL, abs_tol=0.0)
    return a == b


def relative_difference(original: Any, new: Any) -> float | None:
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
                           "identical": original == value, "matched": same_value(original, value)})
    for name in RERUN_FIELDS[doc.command]:
        present_before, original = _field(doc.payload, name)
        present_after, new = _field(again, name)
        if not present_before and not present_after:
            continue
        fields.append({"field": name, "original": original, "rerun": new, "identical": original == new,
                       "matched": same_value(original, new)})
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
