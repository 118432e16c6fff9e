"""Options of ``dpkit audit`` that pass straight to :func:`dpkit.audit.audit`: ``--samples``
(a number or ``auto``), ``--float-bits``/``--no-float-bits``, ``--float-events``, ``--assumption``, and the
run-time estimate callback.

:func:`library_keywords` also refuses combinations that would mislead (a Gaussian-curve fit of a
mechanism that is not Gaussian).
"""

from __future__ import annotations

import argparse
from typing import Any, Callable

from dpkit.commands.audit.pairs import PATTERN_NAMES
from dpkit.commands.audit.search import check_search_options


__all__ = ["check_options", "library_keywords", "samples_option"]


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


# Options of `dpkit audit` that apply only to some targets: option -> (the built-ins it applies to, default).
# Their parser default is None, so that an option the user gave where it does not apply is an error.
_MECHANISM_OPTIONS: dict[str, tuple[tuple[str, ...], Any]] = {
    "noise": (("rnm",), "laplace"),
    "threshold": (("svt", "above-threshold"), 1.0),
    "cutoff": (("svt",), 1),
    "mechanism_delta": (("gaussian",), None),
    "continuous_noise": (("laplace", "gaussian", "rnm", "exponential", "permute-and-flip", "svt", "above-threshold"),
                         False),
}
# Options that apply to mechanism audits only (never to --algorithm), with their defaults.
_MECHANISM_ONLY: dict[str, Any] = {
    "mechanism": None, "claimed_epsilon": None, "claimed_delta": 0.0, "mechanism_epsilon": None,
    "mechanism_delta": None, "sensitivity": 1.0, "threshold": None, "cutoff": None, "noise": None, "pairs": None,
    "length": 10, "sequential": False, "pairs_file": None, "scalar": None, "search": None, "search_budget": None,
    "search_lengths": None, "assumption": None, "power": None,
}
# Options that apply to --algorithm audits only, with their defaults.
_ALGORITHM_ONLY: dict[str, Any] = {"variant": None, "iterations": None}


def _flag(option: str) -> str:
    return "--" + option.replace("_", "-")


def check_options(args: argparse.Namespace) -> None:
    """Refuse every option given where it does not apply; fill in the defaults of those that do."""
    if getattr(args, "algorithm", None):
        given = [o for o, default in _MECHANISM_ONLY.items() if getattr(args, o, None) not in (None, False)]
        if given:
            raise ValueError(f"{', '.join(_flag(o) for o in given)} do{'es' if len(given) == 1 else ''} not apply to "
                             f"--algorithm {args.algorithm} (the scenario sets the mechanism and the claim)")
        for option, default in _ALGORITHM_ONLY.items():
            if getattr(args, option, None) is None:
                setattr(args, option, default)
        return
    given = [o for o in _ALGORITHM_ONLY if getattr(args, o, None) is not None]
    if given:
        raise ValueError(f"{', '.join(_flag(o) for o in given)} appl{'ies' if len(given) == 1 else 'y'} to "
                         f"--algorithm NAME only, not to --mechanism")
    if args.mechanism is None or args.claimed_epsilon is None:
        raise ValueError("--mechanism and --claimed-epsilon are required (or use --algorithm NAME)")
    builtin = ":" not in args.mechanism
    if not builtin and args.mechanism_epsilon is not None:
        raise ValueError("--mechanism-epsilon applies to the built-in mechanisms only, not to module:function")
    _check_pairs_options(args, builtin)
    check_search_options(args)
    for option, (names, default) in _MECHANISM_OPTIONS.items():
        value = getattr(args, option)
        if value is not None and args.mechanism not in names:
            raise ValueError(f"{_flag(option)} applies to --mechanism {' or '.join(names)} only, "
                             f"not to --mechanism {args.mechanism}")
        if value is None and args.mechanism in names:
            setattr(args, option, default)
    for option in ("claimed_delta", "sensitivity", "length"):
        if getattr(args, option) is None:
            setattr(args, option, _MECHANISM_ONLY[option])


def _check_pairs_options(args: argparse.Namespace, builtin: bool) -> None:
    """A user function needs its pairs; ``--scalar`` is for user functions; user pairs take no pattern options."""
    if args.pairs is not None and args.pairs_file is not None:
        raise ValueError("give --pairs or --pairs-file, not both")
    if args.pairs is not None and ":" not in args.pairs and args.pairs not in PATTERN_NAMES:
        raise ValueError(f"--pairs must be one of {', '.join(PATTERN_NAMES)} or module:NAME, got --pairs {args.pairs!r}")
    if args.scalar and builtin:
        raise ValueError(f"--scalar applies to --mechanism module:function only, not to --mechanism {args.mechanism}")
    if not builtin and args.pairs is None and args.pairs_file is None:
        raise ValueError(f"--mechanism {args.mechanism} needs its neighbouring inputs: add --pairs statdp-one (one "
                         f"query answer or record moves by at most --sensitivity), --pairs statdp (every answer may "
                         f"move), --pairs statdp-monotone, --pairs module:NAME or --pairs-file FILE.json (dpkit cannot "
                         f"know which inputs your claim calls neighbours)")
    user_pairs = args.pairs_file is not None or (args.pairs is not None and ":" in args.pairs)
    if user_pairs:
        given = [o for o in ("length",) + (("sensitivity",) if not builtin else ()) if getattr(args, o) is not None]
        if given:
            raise ValueError(f"{', '.join(_flag(o) for o in given)} set{'s' if len(given) == 1 else ''} the StatDP "
                             f"patterns; {'it does' if len(given) == 1 else 'they do'} not apply to your own pairs "
                             f"(--pairs module:NAME or --pairs-file), which are tested as given")
