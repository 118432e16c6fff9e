"""Neighbouring input pairs: validation, and the StatDP input patterns for vectors of query answers.

An audit runs the mechanism on both inputs of each pair ``(D, D′)``. For mechanisms whose
input is a vector of query answers (sparse vector, report-noisy-max, histograms), Ding et al.
(CCS 2018, Sec. 5.1) propose a small set of patterns that move the answers of ``D = (1, …, 1)``
up or down by the sensitivity Δ. dpkit uses their patterns plus the mirror image of every
asymmetric one (the moved coordinate at the end instead of the start): an SVT that leaks
through its threshold is exposed by many "⊥" answers *before* the "⊤" answer. Swapping D and
D′ is unnecessary because every event is tested in both directions.

Relations (checked on every pair):

``"componentwise"``  every coordinate may move by at most Δ (queries of sensitivity Δ);
``"one"``            exactly one coordinate moves, by at most Δ (one record of a dataset);
``"monotone"``       every coordinate moves by at most Δ, all in the same direction.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Sequence

import numpy as np

from dpkit._validation import check_integer, check_positive

__all__ = ["RELATIONS", "StatDPPatterns", "Pair", "check_pair", "resolve_pairs"]

RELATIONS = ("componentwise", "one", "monotone")


@dataclasses.dataclass(frozen=True)
class Pair:
    """A labelled neighbouring pair ``(first, second)``."""

    first: Any
    second: Any
    label: str

    def to_dict(self) -> dict[str, Any]:
        def enc(x: Any) -> Any:
            array = np.asarray(x) if not isinstance(x, np.ndarray) else x
            try:
                numeric = array.dtype.kind in "biuf"
            except Exception:  # pragma: no cover - exotic array-likes
                numeric = False
            return array.tolist() if numeric else repr(x)  # numbers as JSON numbers, other objects as text

        def enc_dataset(x: Any) -> Any:
            return [enc(part) for part in x] if _is_parts(x) else enc(x)

        return {"label": self.label, "first": enc_dataset(self.first), "second": enc_dataset(self.second)}

    @property
    def add_remove(self) -> bool:
        """Whether the inputs differ in length by one record (add/remove neighbours), not in values."""
        first = self.first[0] if _is_parts(self.first) else self.first
        second = self.second[0] if _is_parts(self.second) else self.second
        try:
            return np.shape(first) != np.shape(second)
        except Exception:  # pragma: no cover - ragged objects
            return False


def _is_parts(dataset: Any) -> bool:
    """Whether ``dataset`` is a tuple of arrays read together, such as ``(X, y)``."""
    return isinstance(dataset, tuple) and len(dataset) > 1 and all(
        isinstance(part, (np.ndarray, list, tuple)) for part in dataset)


def _check_parts(first: tuple, second: tuple, label: str) -> Pair:
    """A pair of datasets given in parts, such as ``(X, y)``: every part is checked as an input,
    and the records of the parts (their first axes) must agree within each dataset."""
    if not _is_parts(second) or len(first) != len(second):
        raise ValueError(f"the inputs of pair {label!r} must both be tuples of {len(first)} arrays, such as (X, y)")
    for side, dataset in (("first", first), ("second", second)):
        rows = {np.shape(part)[0] if np.ndim(part) else None for part in dataset}
        if len(rows) != 1 or None in rows:
            raise ValueError(f"the {side} input of pair {label!r} has parts with different numbers of records "
                             f"{[np.shape(part) for part in dataset]}; each part holds one row per record")
    for index, (a, b) in enumerate(zip(first, second)):
        check_pair(a, b, label=f"{label}[{index}]")
    return Pair(first, second, label)


def _check_relation(relation: str) -> str:
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {RELATIONS}, got relation={relation!r}")
    return relation


def check_pair(first: Any, second: Any, relation: str | None = None, sensitivity: float = 1.0, label: str = "") -> Pair:
    """Validate one pair and return it as a :class:`Pair`.

    Numeric array-likes must have finite entries and equal shapes, except that without a
    ``relation`` two datasets may differ by exactly one record along the first axis
    (add/remove neighbours); with a ``relation`` the difference must satisfy it (see the
    module docstring). A dataset given in parts, a tuple of arrays such as ``(X, y)``, is checked
    part by part, and its parts must have one row per record. Other objects (records, strings)
    are passed through unchecked: the mechanism alone knows how to read them.

    >>> X, y = [[0.0], [0.0]], [0, 1]
    >>> check_pair((X, y), ([[1.0], [0.0]], y)).add_remove
    False

    Raises
    ------
    ValueError
        Mismatched shapes, non-finite entries, or a pair that breaks ``relation``.
    """
    if relation is not None:
        _check_relation(relation)
    sensitivity = check_positive("sensitivity", sensitivity)
    if _is_parts(first) and relation is None:
        return _check_parts(first, second, label)
    a, b = np.asarray(first), np.asarray(second)
    numeric = a.dtype.kind in "biuf" and b.dtype.kind in "biuf"
    if not numeric:
        if relation is not None:
            raise TypeError(f"pairs checked against relation={relation!r} must be numeric arrays, got {first!r}")
        return Pair(first, second, label)
    add_remove = a.ndim == b.ndim >= 1 and a.shape[1:] == b.shape[1:] and abs(a.shape[0] - b.shape[0]) == 1
    if a.shape != b.shape and not (add_remove and relation is None):
        raise ValueError(f"the inputs of pair {label or (first, second)!r} must have the same shape (or, for "
                         f"add/remove neighbours, differ by one record), got {a.shape} and {b.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError(f"pair {label!r} has non-finite entries")
    if relation is not None:
        diff = b.astype(float) - a.astype(float)
        tol = 1e-12 * max(1.0, sensitivity)
        if np.any(np.abs(diff) > sensitivity + tol):
            raise ValueError(f"pair {label!r} breaks relation={relation!r}: a coordinate moves by more than sensitivity={sensitivity}")
        moved = int(np.count_nonzero(diff))
        if relation == "one" and moved != 1:
            raise ValueError(f"pair {label!r} breaks relation='one': {moved} coordinates move, expected exactly 1")
        if relation == "monotone" and np.any(diff > 0) and np.any(diff < 0):
            raise ValueError(f"pair {label!r} breaks relation='monotone': coordinates move in both directions")
        if moved == 0:
            raise ValueError(f"pair {label!r} has identical inputs")
    return Pair(first, second, label)


@dataclasses.dataclass(frozen=True)
class StatDPPatterns:
    """The StatDP input patterns (Ding et al. 2018, Sec. 5.1) plus their mirror images.

    Parameters
    ----------
    length
        Number of query answers, or a tuple of lengths (all patterns for each length). Use
        the length your mechanism expects if it only accepts one.
    relation
        ``"componentwise"`` (default, StatDP's setting), ``"one"`` or ``"monotone"``; only
        the patterns that satisfy it are generated, and each is validated.
    sensitivity
        Δ, how far a coordinate moves (answers are ``1`` and ``1 ± Δ``).

    Examples
    --------
    >>> [p.label for p in StatDPPatterns(length=3, relation="one").pairs()]
    ['one_above', 'one_below', 'one_above_reversed', 'one_below_reversed']
    """

    length: int | tuple[int, ...] = 10
    relation: str = "componentwise"
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        lengths = self.length if isinstance(self.length, tuple) else (self.length,)
        if not lengths:
            raise ValueError("length must name at least one length, got length=()")
        for n in lengths:
            check_integer("length", n, minimum=1)
        _check_relation(self.relation)
        check_positive("sensitivity", self.sensitivity)

    def _raw(self, n: int) -> Iterable[tuple[str, np.ndarray, np.ndarray]]:
        d = self.sensitivity
        one = np.ones(n)
        h = n // 2
        up, down = 1.0 + d, 1.0 - d

        def vec(*parts: tuple[float, int]) -> np.ndarray:
            return np.concatenate([np.full(k, v) for v, k in parts])

        single = [("one_above", one, vec((up, 1), (1.0, n - 1))), ("one_below", one, vec((down, 1), (1.0, n - 1)))]
        if self.relation == "one":
            asym, sym = single, []
        elif self.relation == "monotone":
            asym = single
            sym = [("all_above", one, vec((up, n))), ("all_below", one, vec((down, n)))]
        else:
            asym = single + [
                ("one_above_rest_below", one, vec((up, 1), (down, n - 1))),
                ("one_below_rest_above", one, vec((down, 1), (up, n - 1))),
                ("half_half", one, vec((up, h), (down, n - h))),
                ("x_shape", vec((1.0, h), (down, n - h)), vec((down, h), (1.0, n - h))),
            ]
            sym = [("all_above", one, vec((up, n))), ("all_below", one, vec((down, n)))]
        yield from asym
        yield from sym
        for name, a, b in asym:
            yield name + "_reversed", a[::-1].copy(), b[::-1].copy()

    def pairs(self) -> list[Pair]:
        """The validated pairs, duplicates (e.g. for length 1) removed."""
        lengths = self.length if isinstance(self.length, tuple) else (self.length,)
        out: list[Pair] = []
        seen: set[bytes] = set()
        for n in lengths:
            for name, a, b in self._raw(int(n)):
                key = a.tobytes() + b"|" + b.tobytes()
                if key in seen or np.array_equal(a, b):
                    continue
                seen.update((key, b.tobytes() + b"|" + a.tobytes()))
                label = name if len(lengths) == 1 else f"{name}[{n}]"
                out.append(check_pair(a, b, self.relation, self.sensitivity, label))
        return out


_NAMED = {"statdp": "componentwise", "statdp-one": "one", "statdp-monotone": "monotone"}


def resolve_pairs(pairs: Any) -> list[Pair]:
    """Turn the ``pairs`` argument of :func:`~dpkit.audit.audit` into validated :class:`Pair` s.

    Accepts a :class:`StatDPPatterns`, a name (``"statdp"``, ``"statdp-one"``,
    ``"statdp-monotone"``: length 10, Δ = 1), or a sequence of ``(D, D′)`` tuples.
    """
    if isinstance(pairs, StatDPPatterns):
        return pairs.pairs()
    if isinstance(pairs, str):
        if pairs not in _NAMED:
            raise ValueError(f"pairs must be one of {tuple(_NAMED)} or a list of (D, D') pairs, got pairs={pairs!r}")
        return StatDPPatterns(relation=_NAMED[pairs]).pairs()
    if not isinstance(pairs, Sequence) or isinstance(pairs, (bytes, np.ndarray)) and np.asarray(pairs).ndim < 2:
        raise TypeError(f"pairs must be a list of (D, D') pairs, a pattern name or StatDPPatterns, got {type(pairs).__name__}")
    out = []
    for i, item in enumerate(pairs):
        if isinstance(item, Pair):
            out.append(check_pair(item.first, item.second, label=item.label or f"pair{i}"))
            continue
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise ValueError(f"pairs[{i}] must be a (D, D') pair, got {item!r}")
        out.append(check_pair(item[0], item[1], label=f"pair{i}"))
    if not out:
        raise ValueError("pairs must contain at least one (D, D') pair, got an empty list")
    return out
