"""The target of a mechanism audit: a built-in :mod:`dpkit.mechanisms` object calibrated to the
options, or the user's ``module:function``, and the neighbouring inputs the options name."""

from __future__ import annotations

import argparse
import math
from typing import Any, Callable

from dpkit import mechanisms as m  # the commands may use mechanisms; dpkit.audit never does
from dpkit.audit import Pair, from_scalar
from dpkit.commands.audit.pairs import (
    describe_pairs, describe_patterns, load_pairs_file, load_pairs_module, pattern_pairs,
)
from dpkit.commands.user_code import UserFunction, load_attribute

__all__ = ["BUILTINS", "resolve_target", "resolve_pairs"]


BUILTINS = ("laplace", "gaussian", "rnm", "exponential", "permute-and-flip", "svt", "above-threshold")


def _builtin(name: str, args: argparse.Namespace) -> tuple[Any, str]:
    """(dpkit.mechanisms object, default pair family) for a built-in name."""
    eps = args.mechanism_epsilon if args.mechanism_epsilon is not None else args.claimed_epsilon
    eps_option = "--mechanism-epsilon" if args.mechanism_epsilon is not None else "--claimed-epsilon"
    delta = args.mechanism_delta if args.mechanism_delta is not None else args.claimed_delta
    sens = args.sensitivity
    safe = not args.continuous_noise
    table: dict[str, Callable[[], tuple[Any, str]]] = {
        "laplace": lambda: (m.LaplaceMechanism.from_epsilon(eps, sens, float_safe=safe), "statdp-one"),
        "gaussian": lambda: (m.GaussianMechanism.from_epsilon_delta(eps, delta, sensitivity=sens, float_safe=safe),
                             "statdp-one"),
        "rnm": lambda: (m.ReportNoisyMax(epsilon=eps, sensitivity=sens, noise=args.noise, float_safe=safe), "statdp"),
        "exponential": lambda: (m.ExponentialMechanism(epsilon=eps, sensitivity=sens, float_safe=safe), "statdp"),
        "permute-and-flip": lambda: (m.PermuteAndFlip(epsilon=eps, sensitivity=sens, float_safe=safe), "statdp"),
        "svt": lambda: (m.SparseVector.from_epsilon(eps, args.threshold, args.cutoff, sens, float_safe=safe), "statdp"),
        "above-threshold": lambda: (m.AboveThreshold(epsilon=eps, threshold=args.threshold, sensitivity=sens,
                                                     float_safe=safe), "statdp"),
    }
    if name not in table:
        raise ValueError(f"--mechanism must be one of {sorted(table)} or module:function, got {name!r}")
    if eps is None or not eps > 0 or not math.isfinite(eps):
        raise ValueError(f"a built-in mechanism is calibrated to {eps_option}, which must be in (0, inf) here, "
                         f"got {eps_option}={eps}" + ("" if eps_option == "--mechanism-epsilon" else
                                                      " (or set --mechanism-epsilon)"))
    if name == "gaussian" and not (delta is not None and 0.0 < delta < 1.0):
        if args.mechanism_delta is not None:
            raise ValueError(f"--mechanism-delta must be in (0, 1), got --mechanism-delta={delta}")
        raise ValueError("--mechanism gaussian needs a delta in (0, 1): add --claimed-delta (e.g. --claimed-delta "
                         "1e-5), or --mechanism-delta to calibrate the mechanism to another delta")
    return table[name]()


def resolve_target(args: argparse.Namespace) -> tuple[Callable[..., Any], str | None, str]:
    """The callable to audit, its default pair family (``None`` for a user function) and a description."""
    name = args.mechanism
    if ":" in name:
        target = load_attribute(name, "--mechanism")
        if not callable(target):
            raise TypeError(f"--mechanism {name!r} is not callable (got {type(target).__name__})")
        target = UserFunction(target, f"--mechanism {name}")
        if args.scalar:
            return from_scalar(target), None, f"{name} (one output per call, through dpkit.audit.from_scalar)"
        return target, None, name
    mech, family = _builtin(name, args)
    return mech.as_audit_callable(), family, repr(mech)


def resolve_pairs(args: argparse.Namespace, family: str | None) -> tuple[list[Pair], str, str]:
    """The pairs to test, the name recorded for them (``"pairs"`` in the JSON) and their relation in words."""
    if args.pairs_file is not None:
        pairs = load_pairs_file(args.pairs_file)
        return pairs, args.pairs_file, describe_pairs(pairs, f"--pairs-file {args.pairs_file}")
    if args.pairs is not None and ":" in args.pairs:
        pairs = load_pairs_module(args.pairs)
        return pairs, args.pairs, describe_pairs(pairs, f"--pairs {args.pairs}")
    name = args.pairs or family
    if name is None:  # _check_pairs_options refuses a user function without pairs
        raise ValueError(f"--mechanism {args.mechanism} needs --pairs or --pairs-file")
    patterns = pattern_pairs(name, args.length, args.sensitivity)
    return patterns.pairs(), name, describe_patterns(name, args.length, args.sensitivity)


