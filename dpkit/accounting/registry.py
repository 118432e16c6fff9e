"""Accountants by name, for calibration, the command line and reports."""

from __future__ import annotations

from typing import Any

from dpkit.accounting.analytic_gaussian import AnalyticGaussianAccountant
from dpkit.accounting.approx_dp import ApproxDPAccountant
from dpkit.accounting.base import Accountant
from dpkit.accounting.gdp import GDPAccountant
from dpkit.accounting.pld import PLDAccountant
from dpkit.accounting.rdp import RDPAccountant
from dpkit.accounting.tightest import TightestAccountant
from dpkit.accounting.zcdp import ZCDPAccountant

ACCOUNTANTS: dict[str, type[Accountant]] = {
    "rdp": RDPAccountant,
    "zcdp": ZCDPAccountant,
    "pld": PLDAccountant,
    "gdp": GDPAccountant,
    "analytic": AnalyticGaussianAccountant,
    "approx": ApproxDPAccountant,
    "tightest": TightestAccountant,
}
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
