"""Rerun a document's recorded command line, safely, and compare the numbers it reproduces.

Only the command a document records is run (never ``report`` or ``demo``), after dpkit's own
parser has checked it; options that write are removed or refused, and the rerun runs in a child
process under a :class:`~dpkit.report.sandbox.RerunPolicy`: code the document names runs only
if the reader trusts its module (see :mod:`dpkit.report.sandbox`).
"""

from __future__ import annotations

import math
import time
from typing import Any, Mapping, Sequence

from dpkit.commands.runner import parse
from dpkit.report.document import Document
from dpkit.report.sandbox import RerunPolicy, RerunSkipped, code_modules, rerun_plan, run_in_child

#: The numbers a rerun must reproduce, per command.
RERUN_FIELDS: dict[str, tuple[str, ...]] = {
    "epsilon": ("epsilon", "epsilon_lower"),
    "calibrate": ("parameter", "epsilon"),
    "train": ("accuracy", "agent_accuracies", "iterations", "epsilon_corrected", "guarantee.accountant",
              "guarantee.ledger_hash", "epsilon_paper", "paper_claim.valid"),
    "audit": ("epsilon_lower_bound", "violation", "p_value"),
    "dpsgd": ("noise_multiplier", "sampling_rate", "steps", "poisson.epsilon_rdp", "poisson.epsilon_pld",
              "poisson.epsilon_pld_lower", "shuffled.epsilon_once_per_epoch", "user_level.epsilon_rdp",
              "user_level.delta_rdp", "user_level.epsilon_once_per_epoch", "user_level.delta_once_per_epoch",
              "rdp.noise_multiplier", "rdp.epsilon", "pld.noise_multiplier", "pld.epsilon",
              "analytic.noise_multiplier", "analytic.epsilon", "random_allocation.epsilon_rdp",
              "random_allocation.epsilon_pld", "random_allocation.epsilon_pld_lower", "shuffled.epsilon_lower"),
}

#: Longest error message a rerun check keeps (characters).
MAX_ERROR = 500

#: Relative tolerance under which rerun numbers count as reproduced (exact equality is reported too).
RERUN_RTOL = 1e-9


# ---------------------------------------------------------------------------------------------
# Rerun


#: Commands a report reruns; ``report`` and ``demo`` (which write files) are never rerun.
RERUNNABLE = ("epsilon", "calibrate", "train", "audit", "dpsgd")

#: Options whose value is a path dpkit writes to: removed from a recorded argv (exact spelling
#: only; the parser refuses abbreviations) and refused if they survive.
WRITING_OPTIONS = ("out",)

#: Most tokens a recorded argv may have for a rerun: dpkit's commands need well under a hundred, and
#: the parser's time grows with the square of the number of options (argparse looks for the next
#: option from each one, in the standard library), so 4,096 tokens parse in a second or two at most.
MAX_ARGV_TOKENS = 4096

#: Most bytes (UTF-8, one separator per token) a recorded argv may have for a rerun.
MAX_ARGV_BYTES = 256 * 1024

#: Options removed from a recorded argv: those that write, and ``--workers`` (a rerun uses the
#: command's default, at most one process per available core; the numbers do not depend on it).
STRIPPED_OPTIONS = (*WRITING_OPTIONS, "workers")


def _strip_out(argv: Sequence[str]) -> list[str]:
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in tuple(f"--{o}" for o in STRIPPED_OPTIONS):
            skip = True
            continue
        if arg.startswith(tuple(f"--{o}=" for o in STRIPPED_OPTIONS)):
            continue
        out.append(arg)
    return out


def check_argv_size(argv: Sequence[str]) -> None:
    """Refuse an argv of more than :data:`MAX_ARGV_TOKENS` tokens or :data:`MAX_ARGV_BYTES` bytes, before any
    parsing (a ``ValueError`` of one line)."""
    if len(argv) > MAX_ARGV_TOKENS:
        raise ValueError(f"the document's argv has {len(argv)} tokens, more than the {MAX_ARGV_TOKENS} a rerun "
                         f"accepts; refusing to rerun it")
    size = 0
    for arg in argv:
        size += len(arg.encode("utf-8", "surrogatepass")) + 1 if isinstance(arg, str) else 0
        if size > MAX_ARGV_BYTES:
            raise ValueError(f"the document's argv is longer than the {MAX_ARGV_BYTES >> 10} KiB a rerun accepts; "
                             f"refusing to rerun it")


def checked_argv(argv: Sequence[str], command: str | None = None) -> tuple[list[str], Any]:
    """The argv a rerun executes, and its parsed options, after the safety checks.

    The argv's size is checked first (:func:`check_argv_size`); ``argv[0]`` must be ``command``
    (the document's recorded command) and one of :data:`RERUNNABLE`; write options (``--out``)
    are removed, and the rest must parse with the current command line and leave no option that
    writes.

    Raises
    ------
    ValueError
        The argv is too long, names another command, ``report``/``demo``, an option that
        writes, or does not parse (the parser's own message).
    """
    check_argv_size(argv)
    argv = list(argv)
    if not argv:
        raise ValueError("the document records an empty argv")
    if command is not None and argv[0] != command:
        raise ValueError(f"the document's argv runs {argv[0]!r} but its command is {command!r}; refusing to rerun it")
    if argv[0] not in RERUNNABLE:
        raise ValueError(f"a report reruns only {', '.join(RERUNNABLE)}, not {argv[0]!r}")
    argv = _strip_out(argv)
    if any(arg in ("-h", "--help", "--version") for arg in argv):
        raise ValueError("the document's argv asks for help or the version, not a run; refusing to rerun it")
    args = parse(argv)  # CommandError (a ValueError) with the parser's message
    if args.command != argv[0]:
        raise ValueError(f"the document's argv runs {args.command!r}, not {argv[0]!r}; refusing to rerun it")
    for option in WRITING_OPTIONS:
        if getattr(args, option, None) is not None:
            raise ValueError(f"the document's argv writes a file (--{option}); refusing to rerun it")
    return argv, args


def code_to_import(argv: Sequence[str]) -> list[str]:
    """The modules whose code a rerun of ``argv`` would import and run (``audit --mechanism module:function``,
    ``audit --pairs module:NAME``, any ``module:NAME`` in the argv); empty if the argv does not pass the checks."""

    try:
        argv, args = checked_argv(argv)
        return code_modules(argv, args)
    except ValueError:
        return []


def run_argv(argv: Sequence[str], command: str | None = None, policy: RerunPolicy | None = None) -> dict[str, Any]:
    """Execute ``dpkit <argv>`` in a child process and return its JSON object (``train`` also its full result,
    under ``"_full"``).

    ``argv`` goes through :func:`checked_argv`, then :func:`~dpkit.report.sandbox.rerun_plan`
    under ``policy`` (default: no module trusted, the default time limit).

    Raises
    ------
    RerunSkipped
        The argv names code whose module ``policy`` does not trust (nothing was run).
    ValueError
        The argv was refused, or the rerun failed (``"rerun failed: ..."``).
    """
    policy = RerunPolicy() if policy is None else policy
    argv, args = checked_argv(argv, command)
    plan = rerun_plan(argv, args, policy)
    try:
        return run_in_child(plan, policy, full_result=argv[0] == "train")
    except ValueError as error:
        raise ValueError(f"rerun failed: {error}") from None


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


def rerun_check(doc: Document, policy: RerunPolicy | None = None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Re-execute the document's argv; compare its numbers and configuration hash.

    ``matched`` says whether the numbers were reproduced; ``config_hash_matched`` whether the
    rerun's full configuration (defaults included) is the same, and ``config_differences`` lists
    the options that differ (e.g. an option a newer dpkit added, with its default).
    A rerun of code the reader has not trusted is skipped: ``performed`` is False, ``skipped``
    names the modules and ``allow`` the options that allow it.
    Returns the check (JSON-ready) and the rerun's JSON object (``None`` if it failed).
    """
    start = time.perf_counter()
    try:
        again = run_argv(doc.argv, doc.command, policy)
    except RerunSkipped as skipped:
        return {"performed": False, "matched": None, "fields": [], "skipped": skipped.modules,
                "allow": skipped.allow, "reason": str(skipped)}, None
    except Exception as error:  # noqa: BLE001  (one document's rerun never stops the report of the others)
        text = str(error)  # one line, short: a document's 50 MB argument is not echoed back
        text = text.splitlines()[0] if text.strip() else type(error).__name__
        if not isinstance(error, (ValueError, TypeError)):
            text = f"the rerun could not be performed ({type(error).__name__}: {text})"
        return {"performed": True, "matched": False, "fields": [],
                "error": text if len(text) <= MAX_ERROR else text[:MAX_ERROR - 3] + "..."}, None
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
