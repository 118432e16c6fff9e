"""Collection settings for ``pytest`` run from the repository root (doctests of ``dpkit/`` included)."""

from __future__ import annotations

import importlib.util

# Modules of optional extras raise ImportError without them; their doctests need the extra.
collect_ignore = [] if importlib.util.find_spec("distributed") else ["dpkit/audit/dask.py"]
