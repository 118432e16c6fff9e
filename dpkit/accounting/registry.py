"""Accountants by name, for calibration, the command line and reports."""

from __future__ import annotations

from typing import Any

import importlib
from collections.abc import Iterator, Mapping

from dpkit.accounting.base import Accountant


class _LazyAccountants(Mapping[str, type[Accountant]]):
    """Name → accountant class, each module imported when its class is first asked for (so that
    the RDP accountant does not import the PLD and scipy.stats)."""

    def __init__(self, where: dict[str, str]):
        self._where = where

    def __getitem__(self, name: str) -> type[Accountant]:
        module, _, attribute = self._where[name].partition(":")
        return getattr(importlib.import_module(module), attribute)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


ACCOUNTANTS: Mapping[str, type[Accountant]] = _LazyAccountants({
    "rdp": "dpkit.accounting.rdp:RDPAccountant",
    "zcdp": "dpkit.accounting.zcdp:ZCDPAccountant",
    "pld": "dpkit.accounting.pld:PLDAccountant",
    "gdp": "dpkit.accounting.gdp:GDPAccountant",
    "analytic": "dpkit.accounting.analytic_gaussian:AnalyticGaussianAccountant",
    "approx": "dpkit.accounting.approx_dp:ApproxDPAccountant",
    "tightest": "dpkit.accounting.tightest:TightestAccountant",
})
"""Name → accountant class; the names are those of ``--accountant`` and of results' ``accountant``."""


def accountant_class(name: str) -> type[Accountant]:
    """The accountant class registered under ``name``.

    >>> accountant_class("rdp").__name__
    'RDPAccountant'
    """
    if name not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {sorted(ACCOUNTANTS)}, got accountant={name!r}")
    return ACCOUNTANTS[name]


def make_accountant(name: str, **kwargs: Any) -> Accountant:
    """A new, empty accountant registered under ``name`` (``kwargs`` go to its constructor)."""
    return accountant_class(name)(**kwargs)
