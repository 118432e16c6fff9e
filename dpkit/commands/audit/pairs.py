"""The neighbouring inputs of ``dpkit audit``: StatDP pattern names, a JSON file, or a user module.

``--pairs-file pairs.json`` holds a JSON list of ``[D, D′]`` pairs, each input a list of
numbers (or a rectangular nested list, e.g. records × features)::

    [[[0, 1, 1], [1, 1, 1]],
     [[0, 0, 0], [0, 0, 1]]]

``--pairs module:NAME`` names a list of such pairs, or a function of no arguments returning
one, in the user's module. Both inputs of a pair must have the same shape, or differ by
exactly one record along the first axis (add/remove neighbours). Every error is one line that
names the source and the index (``pairs[3][1]`` is D′ of the fourth pair).

The audit tests exactly these pairs: they *are* the neighbouring relation of the claim, and
:func:`describe_change` states what each pair changes, so the output can show it.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
from typing import Any, Sequence

import numpy as np

from dpkit.audit import Pair, StatDPPatterns, check_pair
from dpkit.commands.errors import UserCodeError
from dpkit.commands.user_code import UserCodeExit, call_user, load_attribute

__all__ = ["PATTERN_NAMES", "describe_change", "describe_patterns", "describe_pairs", "load_pairs_file",
           "load_pairs_module", "pairs_digest", "pattern_pairs", "user_pairs"]

PATTERN_NAMES = {"statdp": "componentwise", "statdp-one": "one", "statdp-monotone": "monotone"}
"""``--pairs`` names of the StatDP input patterns and the relation each generates."""


def pattern_pairs(name: str, length: int, sensitivity: float) -> StatDPPatterns:
    """The StatDP patterns ``name`` of ``length`` query answers moved by ``sensitivity``."""
    return StatDPPatterns(length=length, relation=PATTERN_NAMES[name], sensitivity=sensitivity)


def describe_patterns(name: str, length: int, sensitivity: float) -> str:
    """The neighbouring relation the StatDP patterns ``name`` stand for, in words."""
    d = f"{sensitivity:g}"
    return {
        "statdp-one": f"one record changes: exactly one of {length} query answers moves by at most {d} "
                      f"(--pairs statdp-one)",
        "statdp": f"every one of {length} query answers may move by at most {d} (queries of sensitivity {d}; "
                  f"--pairs statdp)",
        "statdp-monotone": f"every one of {length} query answers may move by at most {d}, all in the same "
                           f"direction (--pairs statdp-monotone)",
    }[name]


def load_pairs_file(path: str) -> list[Pair]:
    """The pairs of the JSON file ``path`` (``--pairs-file``), validated.

    Raises
    ------
    ValueError
        The file cannot be read, is not JSON, or a pair is malformed (the message names the
        path and the index).
    """
    source = f"--pairs-file {path!r}"
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise ValueError(f"{source}: cannot read it: {reason}") from None
    try:
        items = json.loads(text)  # NaN and Infinity parse, and are refused with their index below
    except json.JSONDecodeError as error:
        raise ValueError(f"{source}: not valid JSON: {error}") from None
    return user_pairs(items, source, os.path.basename(path))


def load_pairs_module(spec: str) -> list[Pair]:
    """The pairs named by ``module:NAME`` (``--pairs``): a list of pairs, or a function returning one."""
    source = f"--pairs {spec!r}"
    items = load_attribute(spec, "--pairs")
    if callable(items):
        try:
            items = call_user(items, source)
        except UserCodeExit:
            raise
        except Exception as error:
            raise UserCodeError(f"{source}: calling it raised {type(error).__name__}: {error}") from None
    if not isinstance(items, (list, tuple)) and hasattr(items, "__iter__") and not isinstance(items, (str, bytes, dict)):
        items = list(items)
    return user_pairs(items, source, spec)


def user_pairs(items: Any, source: str, label: str) -> list[Pair]:
    """Validate a list of ``[D, D′]`` pairs from ``source``; the pairs are labelled ``label[i]``."""
    if isinstance(items, np.ndarray):
        items = list(items)
    if not isinstance(items, (list, tuple)):
        raise ValueError(f"{source}: expected a list of [D, D'] pairs, got {_kind(items)}")
    if not items:
        raise ValueError(f"{source}: expected at least one [D, D'] pair, got an empty list")
    out = []
    for i, item in enumerate(items):
        if isinstance(item, np.ndarray):
            item = list(item)
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise ValueError(f"{source}: pairs[{i}] must be a list [D, D'] of two inputs, got {_kind(item)}")
        first = _input(item[0], f"{source}: pairs[{i}][0] (D)")
        second = _input(item[1], f"{source}: pairs[{i}][1] (D')")
        if first.shape != second.shape and not _add_remove(first, second):
            raise ValueError(f"{source}: pairs[{i}]: D has shape {first.shape} and D' has shape {second.shape}; "
                             f"they must have the same shape, or differ by exactly one record along the first "
                             f"axis (add/remove neighbours)")
        if first.shape == second.shape and np.array_equal(first, second):
            raise ValueError(f"{source}: pairs[{i}]: D and D' are identical, so the pair tests nothing")
        out.append(check_pair(first, second, label=f"{label}[{i}]"))
    return out


def pairs_digest(pairs: Sequence[Pair]) -> str:
    """SHA-256 of the pairs as canonical JSON, so a document records which inputs it tested
    (a pairs file or module can change while the command line stays the same)."""
    canonical = [[np.asarray(p.first).tolist(), np.asarray(p.second).tolist()] for p in pairs]
    return hashlib.sha256(json.dumps(canonical, separators=(",", ":")).encode("utf-8")).hexdigest()


def describe_change(pair: Pair) -> str:
    """What ``pair`` changes, measured on its inputs.

    >>> describe_change(Pair([0, 1, 1], [1, 1, 1], "p"))
    '1 of 3 entries differs, by at most 1'
    """
    a, b = np.asarray(pair.first), np.asarray(pair.second)
    if a.shape != b.shape:
        more = "more" if b.shape[0] > a.shape[0] else "fewer"
        return f"D' has one record {more} than D (add/remove neighbours)"
    diff = np.abs(b.astype(float) - a.astype(float))
    if a.ndim > 1:
        rows = int(np.count_nonzero(diff.reshape(a.shape[0], -1).max(axis=1)))
        return f"{rows} of {a.shape[0]} records differ{'s' if rows == 1 else ''}, by at most {diff.max():g} per entry"
    moved = int(np.count_nonzero(diff))
    return f"{moved} of {a.size} entries differ{'s' if moved == 1 else ''}, by at most {diff.max():g}"


def describe_pairs(pairs: Sequence[Pair], source: str) -> str:
    """The neighbouring relation defined by user pairs from ``source``, summarised from the pairs."""
    changes = sorted({describe_change(p) for p in pairs})
    shown = "; ".join(changes[:3]) + (f"; and {len(changes) - 3} more kinds" if len(changes) > 3 else "")
    return f"the {len(pairs)} pair{'s' if len(pairs) != 1 else ''} of {source}; in each, {shown}"


def _add_remove(a: np.ndarray, b: np.ndarray) -> bool:
    return a.ndim == b.ndim >= 1 and a.shape[1:] == b.shape[1:] and abs(a.shape[0] - b.shape[0]) == 1


def _input(value: Any, where: str) -> np.ndarray:
    """One input as a numeric array, or a ``ValueError`` saying what is wrong and where."""
    problem = _first_problem(value, "")
    if problem:
        raise ValueError(f"{where}{' ' if problem.startswith('is ') else ': '}{problem}")
    try:
        array = np.asarray(value)
    except ValueError:  # inhomogeneous nesting
        raise ValueError(f"{where} is ragged: its nested lists have different lengths") from None
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{where} is ragged: its nested lists have different lengths")
    if array.ndim == 0:
        raise ValueError(f"{where} must be a list of numbers, got the single number {value!r}")
    return array


def _first_problem(value: Any, index: str) -> str:
    """A description of the first entry of ``value`` that is not a finite number ("" if none)."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iuf":
            return f"entries of dtype {value.dtype} are not numbers"
        bad = np.argwhere(~np.isfinite(value)) if value.dtype.kind == "f" else []
        if len(bad):
            return f"entry {index}{''.join(f'[{k}]' for k in bad[0])} is {value[tuple(bad[0])]}, not a finite number"
        return ""
    if isinstance(value, (list, tuple)):
        for k, entry in enumerate(value):
            problem = _first_problem(entry, f"{index}[{k}]")
            if problem:
                return problem
        return ""
    shown = json.dumps(value) if _jsonable(value) else repr(value)
    if not index:  # the input itself is not a list
        return f"is {shown}, not a list of numbers"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return f"entry {index} is {shown}, not a number"
    if not math.isfinite(float(value)):
        return f"entry {index} is {value}, not a finite number"
    return ""


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _kind(value: Any) -> str:
    names = {dict: "an object (dict)", str: "a string", bool: "a boolean", type(None): "null"}
    for kind, name in names.items():
        if isinstance(value, kind):
            return name
    if isinstance(value, numbers.Real):
        return f"the number {value!r}"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} item{'' if len(value) == 1 else 's'}"
    return type(value).__name__
