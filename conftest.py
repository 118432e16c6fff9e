"""Collection settings for ``pytest`` run from the repository root (doctests of ``dpkit/`` included)."""

from __future__ import annotations

import importlib.util

# Modules of optional extras raise ImportError without them; their doctests need the extra.
collect_ignore = [] if importlib.util.find_spec("distributed") else ["dpkit/audit/dask.py"]
# docs/interop.md runs dp_accounting side by side with dpkit (extra `compare`).
if not importlib.util.find_spec("dp_accounting"):
    collect_ignore.append("docs/interop.md")
