"""Doctests of the pages that need an optional extra are collected only when it is installed."""

from __future__ import annotations

import importlib.util

collect_ignore = [] if importlib.util.find_spec("dp_accounting") else ["interop.md"]
