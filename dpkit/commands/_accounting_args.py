"""Options shared by ``dpkit epsilon`` and ``dpkit calibrate``: mechanism, sampling, accountant.

The command line describes one privacy event — a base mechanism, optionally subsampled,
repeated ``--count`` times — and an accountant by name. This module turns the parsed
options into that event (:func:`build_event`) and formats results; the numbers all come
from :mod:`dpkit.accounting`.
"""

from __future__ import annotations

import argparse
import math
import sys
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any, Callable, ContextManager

import numpy as np

from dpkit import accounting
from dpkit.accounting.events import (
    GaussianEvent,
    LaplaceEvent,
    PoissonSampledEvent,
    PrivacyEvent,
    RandomAllocationEvent,
    RandomizedResponseEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
)
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.commands import strict_json
from dpkit.commands.option_names import options_named
from dpkit.commands import _peer_mechanisms as peer
from dpkit.commands import _sparse_vector_args as sparse_vector

MECHANISMS = ("gaussian", "laplace", "randomized-response")
SAMPLING = ("none", "poisson", "without-replacement", "random-allocation")
ACCOUNTANTS = ("rdp", "zcdp", "analytic", "pld", "gdp", "approx")

PARAMETER_OF = {"gaussian": "sigma", "laplace": "scale", "randomized-response": "epsilon0"}
"""The option that sets each mechanism's privacy parameter (what ``calibrate`` computes)."""

MECHANISMS = MECHANISMS + peer.MECHANISMS  # tree-aggregation, repeat-and-select, exponential, shuffle
PARAMETER_OF = {**PARAMETER_OF, **peer.PARAMETER_OF}
MECHANISMS = MECHANISMS + sparse_vector.MECHANISMS
PARAMETER_OF = {**PARAMETER_OF, **sparse_vector.PARAMETER_OF}


def whole_number(text: str) -> int:
    """An integer option that also accepts an exact float spelling (``1e9``, ``1000.0``)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer value: {text!r}") from None
    if not math.isfinite(value) or value != int(value):
        raise argparse.ArgumentTypeError(f"invalid integer value: {text!r} (a whole number, e.g. 1000 or 1e9)")
    return int(value)


def parameter_name(args: argparse.Namespace) -> str:
    """The option that sets the mechanism's privacy parameter (sparse-vector: depends on --noise)."""
    if args.mechanism in sparse_vector.MECHANISMS:
        return sparse_vector.parameter_name(args)
    return PARAMETER_OF[args.mechanism]


def add_arguments(parser: argparse.ArgumentParser, *, calibrating: bool) -> None:
    """Add the mechanism, sampling, accountant and output options to ``parser``."""
    mech = parser.add_argument_group("mechanism")
    mech.add_argument("--mechanism", choices=MECHANISMS, default="gaussian", help="base mechanism (default gaussian)")
    if not calibrating:
        mech.add_argument("--sigma", type=float, help="Gaussian noise standard deviation")
        mech.add_argument("--scale", type=float, help="Laplace noise scale b")
        mech.add_argument("--epsilon0", type=float, help="randomized-response epsilon of one use")
    mech.add_argument("--k", type=int, default=2, help="randomized-response arity (default 2)")
    mech.add_argument("--sensitivity", type=float, default=1.0, help="sensitivity (L2 for gaussian, L1 for laplace; default 1)")
    mech.add_argument("--count", type=whole_number, default=1, help="number of adaptive repetitions (default 1)")
    peer.add_arguments(mech)
    sparse_vector.add_arguments(mech)
    samp = parser.add_argument_group("sampling")
    samp.add_argument("--sampling", choices=SAMPLING, default="none", help="subsampling before each use (default none)")
    samp.add_argument("--rate", type=float, help="sampling rate q (poisson), or batch/population (without-replacement)")
    samp.add_argument("--batch", type=int, help="batch size m (without-replacement)")
    samp.add_argument("--population", type=int, help="population size n (without-replacement)")
    samp.add_argument("--steps-per-epoch", type=int, metavar="T",
                      help="random-allocation: steps per epoch T (each record in --uses-per-epoch of them); "
                           "--count is then the number of epochs")
    samp.add_argument("--uses-per-epoch", type=int, metavar="K", default=None,
                      help="random-allocation: steps per epoch each record takes part in (default 1)")
    acc = parser.add_argument_group("accounting")
    acc.add_argument(
        "--neighbouring",
        choices=[r.value for r in NeighbouringRelation],
        default=None,
        help="neighbouring relation (default add-remove; replace-one with --sampling without-replacement)",
    )
    acc.add_argument("--delta", type=float, required=True, help="target delta in (0, 1)")
    acc.add_argument("--accountant", choices=ACCOUNTANTS, default="rdp", help="accountant (default rdp)")
    acc.add_argument("--target-width", type=float, metavar="W",
                     help="PLD only: refine the grid until the certified interval [lower, upper] of epsilon is at "
                          "most W wide (default 1e-5, best effort); the width reached is printed")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def accountant_maker(args: argparse.Namespace, name: str | None = None) -> Callable[[], Any]:
    """A factory of fresh accountants ``name`` (default ``--accountant``), with ``--target-width`` for the PLD."""
    name = args.accountant if name is None else name
    relation = neighbouring(args)
    width = getattr(args, "target_width", None)
    if width is None:
        return accounting.accountant_factory(name, relation)
    if not (math.isfinite(width) and width > 0):
        raise ValueError(f"--target-width must be in (0, inf), got --target-width={width}")
    if args.accountant != "pld" and not getattr(args, "compare", False):
        raise ValueError(f"--target-width applies to --accountant pld only (the {args.accountant} accountant's "
                         f"answer is not an interval), got --accountant {args.accountant}")
    if name != "pld":
        return accounting.accountant_factory(name, relation)

    def make() -> Any:
        return accounting.PLDAccountant(neighbouring=relation, target_width=width)

    return make


def interval_line(result: Any, target_width: float | None) -> str | None:
    """``certified interval [lower, upper], width W`` for a result with a lower end (PLD), else ``None``;
    printed with enough digits to show ``target_width``."""
    if result.epsilon_lower is None:
        return None
    width = result.epsilon - result.epsilon_lower
    digits = 6
    if target_width is not None and math.isfinite(result.epsilon) and result.epsilon > 0:
        digits = max(6, min(17, math.ceil(math.log10(max(result.epsilon, 1e-300) / target_width)) + 2))
    text = (f"certified interval [{fmt_down(result.epsilon_lower, digits)}, {fmt_up(result.epsilon, digits)}], "
            f"width {fmt_up(width, 3)}")
    if target_width is not None:
        text += f" (target {target_width:g})"
    return text


def neighbouring(args: argparse.Namespace) -> NeighbouringRelation:
    """The relation asked for, defaulting to the natural one of the sampling scheme."""
    if args.neighbouring is not None:
        return NeighbouringRelation.parse(args.neighbouring)
    if args.sampling == "without-replacement" or args.mechanism == "shuffle":  # shuffling: replace-one (FMT 2021)
        return NeighbouringRelation.REPLACE_ONE
    return NeighbouringRelation.ADD_REMOVE


def base_event(mechanism: str, value: float, args: argparse.Namespace) -> PrivacyEvent:
    """One use of the base mechanism with privacy parameter ``value``."""
    if mechanism in peer.MECHANISMS:
        return peer.base_event(mechanism, value, args)
    if mechanism in sparse_vector.MECHANISMS:
        return sparse_vector.base_event(value, args)
    if mechanism == "gaussian":
        return GaussianEvent(value, args.sensitivity)
    if mechanism == "laplace":
        return LaplaceEvent(value, args.sensitivity)
    return RandomizedResponseEvent(value, args.k)


def _sampled(event: PrivacyEvent, args: argparse.Namespace) -> PrivacyEvent:
    allocation = {"steps_per_epoch": args.steps_per_epoch, "uses_per_epoch": args.uses_per_epoch}
    if args.sampling != "random-allocation":
        for option, value in allocation.items():
            if value is not None:
                raise ValueError(f"--{option.replace('_', '-')} needs --sampling random-allocation")
    if args.sampling == "random-allocation":
        for option in ("rate", "batch", "population"):
            if getattr(args, option) is not None:
                raise ValueError(f"--{option} does not apply to --sampling random-allocation "
                                 "(use --steps-per-epoch and --uses-per-epoch)")
        if args.steps_per_epoch is None:
            raise ValueError("--sampling random-allocation needs --steps-per-epoch T (an integer >= 1)")
        return RandomAllocationEvent(event, args.steps_per_epoch, 1 if args.uses_per_epoch is None
                                     else args.uses_per_epoch)
    if args.sampling == "none":
        for option in ("rate", "batch", "population"):
            if getattr(args, option) is not None:
                raise ValueError(f"--{option} needs --sampling poisson or without-replacement")
        return event
    if args.sampling == "poisson":
        if args.rate is None:
            raise ValueError("--sampling poisson needs --rate q with q in (0, 1]")
        if args.batch is not None or args.population is not None:
            raise ValueError("--batch/--population apply to --sampling without-replacement; use --rate for poisson")
        return PoissonSampledEvent(event, args.rate)
    population = args.population
    if population is None:
        raise ValueError("--sampling without-replacement needs --population n and --batch m (or --rate)")
    batch = args.batch
    if batch is None:
        if args.rate is None:
            raise ValueError("--sampling without-replacement needs --batch m or --rate q")
        batch = round(args.rate * population)
        if not math.isclose(batch, args.rate * population, rel_tol=1e-9, abs_tol=1e-9):
            raise ValueError(
                f"rate * population must be a whole batch size, got rate={args.rate}, population={population}"
            )
    elif args.rate is not None and not math.isclose(args.rate, batch / population, rel_tol=1e-9):
        raise ValueError(f"--rate {args.rate} disagrees with --batch/--population = {batch / population}")
    return SampledWithoutReplacementEvent(event, batch, population)


OPTION_OF = {"sigma": "--sigma", "scale": "--scale", "epsilon": "--epsilon0", "k": "--k", "sensitivity": "--sensitivity",
             "count": "--count", "rate": "--rate", "sample_size": "--batch", "population_size": "--population",
             "step_counts": "--steps", "mean": "--repeat-mean", "shape": "--repeat-shape", "n_users": "--users",
             "cutoff": "--cutoff", "max_queries": "--max-queries", "steps": "--steps-per-epoch",
             "selected": "--uses-per-epoch"}
"""The option behind each event field, for error messages."""


def make_event_factory(args: argparse.Namespace) -> Callable[[float], PrivacyEvent]:
    """``parameter -> event``: the base mechanism at ``parameter``, sampled, repeated ``--count`` times."""

    def make(value: float) -> PrivacyEvent:
        with options_named(OPTION_OF):
            event = _sampled(base_event(args.mechanism, value, args), args)
            return peer.wrap(event if args.count == 1 else SelfComposedEvent(event, args.count), args)

    return make


MAX_COUNT = 2**63 - 1
"""Most repetitions (``--count``, DP-SGD steps) the commands account for: an int64, far past any run."""

FLOAT_OPTIONS = ("sigma", "scale", "epsilon0", "sensitivity", "rate", "delta", "target_width", "repeat_mean",
                 "repeat_shape", "epsilon", "rtol", "noise_multiplier", "epochs")
"""The float options of ``epsilon``, ``calibrate``, ``dpsgd`` and ``train``, checked by :func:`check_numbers`."""


def check_numbers(args: argparse.Namespace) -> None:
    """Refuse a NaN, an infinity or a subnormal number (0 < |x| < 2.2e-308) in any float option, naming
    it: no such option means anything there, and a subnormal one divides to infinity."""
    for name in FLOAT_OPTIONS:
        value = getattr(args, name, None)
        if isinstance(value, float) and (not math.isfinite(value) or 0.0 < abs(value) < sys.float_info.min):
            option = "--" + name.replace("_", "-")
            raise ValueError(f"{option} must be a number, finite and not subnormal (0 or at least "
                             f"{sys.float_info.min:.4g} in magnitude), got {option}={value!r}")


def quiet_float_warnings() -> ContextManager[Any]:
    """numpy's floating-point warnings off while a command computes: an extreme but valid input (a
    sensitivity of 1e308) may overflow inside an accountant, which then answers the trivial bound
    with a note, or raises on a NaN (:mod:`dpkit.accounting.base`); a raw ``RuntimeWarning`` beside
    that answer would only be noise."""
    return np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore")


def check_common(args: argparse.Namespace) -> None:
    """Validate options that argparse cannot (mechanism-specific ones)."""
    check_numbers(args)
    if not 1 <= args.count <= MAX_COUNT:
        raise ValueError(f"--count must be an integer in [1, 2**63 - 1], got --count={args.count:g}")
    if args.mechanism != "randomized-response" and args.k != 2:
        raise ValueError("--k applies to --mechanism randomized-response only")
    if args.mechanism == "randomized-response" and args.sensitivity != 1.0:
        raise ValueError("--sensitivity does not apply to randomized-response")
    peer.check(args)
    sparse_vector.check(args)


def emit(payload: dict[str, Any], text: str, as_json: bool) -> None:
    """Print ``payload`` as one strict JSON object (see :mod:`~dpkit.commands.strict_json`), or ``text``."""
    print(strict_json.dumps(payload, sort_keys=True) if as_json else text)


def fmt_up(value: float | None, digits: int = 6) -> str:
    """``value`` rounded *up* to ``digits`` significant digits (a displayed upper bound stays one)."""
    return _round(value, digits, ROUND_CEILING)


def fmt_down(value: float | None, digits: int = 6) -> str:
    """``value`` rounded *down* to ``digits`` significant digits (a displayed lower bound stays one)."""
    return _round(value, digits, ROUND_FLOOR)


def _round(value: float | None, digits: int, rounding: str) -> str:
    if value is None:
        return "n/a"
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    exact = Decimal(value)  # the exact binary value
    rounded = exact.quantize(Decimal(1).scaleb(exact.adjusted() - digits + 1), rounding=rounding)
    return f"{rounded.normalize():g}" if abs(exact.adjusted()) < 5 else f"{float(rounded):.{digits}g}"


def describe(args: argparse.Namespace, parameter: str | None = None, value: float | None = None) -> str:
    """A one-line description of the event the options describe."""
    if args.mechanism == "randomized-response":
        base = f"{args.k}-ary randomized response"
    elif args.mechanism in sparse_vector.MECHANISMS:
        base = sparse_vector.describe(args)
    elif args.mechanism in peer.MECHANISMS:
        base = peer.describe(args)
    else:
        base = f"{args.mechanism} (sensitivity {args.sensitivity:g})"
    if parameter is not None and value is not None:
        base += f" with {parameter}={value:.6g}"
    if args.sampling == "poisson":
        base += f", Poisson sampling at rate {args.rate:g}"
    elif args.sampling == "without-replacement":
        base += ", sampling without replacement"
    elif args.sampling == "random-allocation":
        uses = 1 if args.uses_per_epoch is None else args.uses_per_epoch
        base += f", random allocation ({uses} of {args.steps_per_epoch} steps per epoch)"
        return base + f", {args.count} epoch{'s' if args.count != 1 else ''}"
    return base + f", {args.count} time{'s' if args.count != 1 else ''}"
