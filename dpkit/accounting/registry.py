"""Accountants by name, for the command line and for reports.

Each entry maps a name to ``"module:Class"``; the class is imported only when asked for,
so a missing optional piece never breaks the others.
"""

from __future__ import annotations

import importlib
from typing import Any

from dpkit.accounting.base import Accountant

ACCOUNTANTS: dict[str, str] = {
    "rdp": "dpkit.accounting.rdp:RdpAccountant",
    "zcdp": "dpkit.accounting.zcdp:ZCDPAccountant",
    "pld": "dpkit.accounting.pld:PLDAccountant",
    "gdp": "dpkit.accounting.gdp:GDPAccountant",
    "analytic": "dpkit.accounting.analytic_gaussian:AnalyticGaussianAccountant",
    "approx": "dpkit.accounting.approx_dp:ApproxDPAccountant",
}


def accountant_class(name: str) -> type[Accountant]:
    """The accountant class registered under ``name``."""
    if name not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {sorted(ACCOUNTANTS)}, got accountant={name!r}")
    module_name, class_name = ACCOUNTANTS[name].split(":")
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"accountant {name!r} is not available in this installation ({error})") from None


def make_accountant(name: str, **kwargs: Any) -> Accountant:
    """A new, empty accountant registered under ``name`` (``kwargs`` go to its constructor)."""
    return accountant_class(name)(**kwargs)
