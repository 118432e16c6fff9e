"""Options of ``dpkit audit`` that pass straight to :func:`dpkit.audit.audit`: ``--samples``
(a number or ``auto``), ``--float-bits``/``--no-float-bits``, ``--float-events``, ``--assumption``, and the
run-time estimate callback.

:func:`library_keywords` also refuses combinations that would mislead (a Gaussian-curve fit of a
mechanism that is not Gaussian).
"""

from __future__ import annotations

import argparse
from typing import Any, Callable


__all__ = ["library_keywords", "samples_option"]


def samples_option(text: str) -> int | str:
    """argparse type of ``--samples``: an integer ≥ 1, or ``auto``.

    >>> samples_option("2000000"), samples_option("auto")
    (2000000, 'auto')
    """
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1 or auto, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1 or auto, got {text!r}")
    return value


def library_keywords(args: argparse.Namespace, on_estimate: Callable[[float], None] | None) -> dict[str, Any]:
    """Keyword arguments of :func:`dpkit.audit.audit` for ``--float-bits``/``--no-float-bits`` (only when
    given), ``--float-events``, ``--assumption`` and the run-time estimate callback ``on_estimate``.

    Raises
    ------
    ValueError
        ``--assumption gaussian`` without ``--claimed-delta > 0``, with ``--sequential``, or on a built-in
        mechanism other than ``gaussian`` (a Laplace or selection mechanism is not Gaussian, so a fitted
        Gaussian curve would overstate its ε and refute a true claim).
    """
    keywords: dict[str, Any] = {"on_estimate": on_estimate}
    if getattr(args, "float_bits", None) is not None:
        keywords["float_bits"] = bool(args.float_bits)
    if getattr(args, "float_events", None):
        keywords["float_events"] = True
    if getattr(args, "assumption", None) is not None:
        if not getattr(args, "claimed_delta", 0.0) or getattr(args, "sequential", False):
            raise ValueError(f"--assumption {args.assumption} needs --claimed-delta > 0 (a Gaussian curve is never "
                             f"(epsilon, 0)-DP) and does not combine with --sequential")
        mechanism = getattr(args, "mechanism", None)
        if mechanism is not None and ":" not in mechanism and mechanism != "gaussian":
            raise ValueError(f"--assumption {args.assumption} applies to --mechanism gaussian or to your own "
                             f"module:function whose outputs you know to be Gaussian, not to --mechanism {mechanism}")
        keywords["assumption"] = args.assumption
    return keywords
