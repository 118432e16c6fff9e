"""The neighbouring relation: which pairs of datasets a guarantee protects.

A guarantee is meaningless without its relation. dpkit names it explicitly
wherever it changes a number (mostly in sampling amplification), and every
accounting result records it.
"""

from __future__ import annotations

import enum


class NeighbouringRelation(str, enum.Enum):
    """How two neighbouring datasets differ.

    ``ADD_REMOVE``
        D′ is D with one record added or removed (unbounded DP). Poisson
        subsampling amplifies under this relation.
    ``REPLACE_ONE``
        D′ is D with one record replaced by another (bounded DP). A
        sensitivity under add/remove at most doubles under replace-one.
    """

    ADD_REMOVE = "add-remove"
    REPLACE_ONE = "replace-one"

    @classmethod
    def parse(cls, value: "NeighbouringRelation | str") -> "NeighbouringRelation":
        """Accept an enum member or its name/value in any of the spellings
        ``add-remove``, ``add_remove``, ``ADD_REMOVE``, ``replace-one``, ``replace_one``.

        >>> NeighbouringRelation.parse("replace_one")
        <NeighbouringRelation.REPLACE_ONE: 'replace-one'>
        """
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            key = value.strip().lower().replace("_", "-")
            for member in cls:
                if member.value == key:
                    return member
        allowed = ", ".join(repr(m.value) for m in cls)
        raise ValueError(f"neighbouring must be one of {allowed}, got neighbouring={value!r}")
