"""``dpkit calibrate``: the least noise (or largest RR ε) that meets a target (ε, δ).

Calibrates the privacy parameter of the chosen mechanism — σ (gaussian), scale b (laplace)
or ε₀ (randomized-response) — with everything else (sensitivity, count, sampling) fixed,
by :func:`dpkit.accounting.calibration.calibrate` (one-sided: the printed value meets the
target under the chosen accountant). Examples::

    dpkit calibrate --mechanism gaussian --epsilon 1 --delta 1e-5 --count 100 --accountant rdp --json
    dpkit calibrate --mechanism gaussian --epsilon 1 --delta 1e-5 --accountant analytic --json
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from dpkit._validation import check_open_unit, check_positive
from dpkit.accounting.analytic_gaussian import gaussian_sigma
from dpkit.accounting.calibration import CalibrationResult, calibrate, calibrate_gaussian_sigma
from dpkit.commands import _accounting_args as common


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="noise (sigma or scale) that meets a target (epsilon, delta)",
        description="Calibrate the mechanism's parameter to a target (epsilon, delta), never on the unsafe side.",
    )
    parser.add_argument("--epsilon", type=float, required=True, help="target epsilon > 0")
    parser.add_argument("--rtol", type=float, default=1e-6, help="relative tolerance of the result (default 1e-6)")
    common.add_arguments(parser, calibrating=True)
    parser.set_defaults(func=run)


def _calibrate(args: argparse.Namespace) -> CalibrationResult:
    epsilon = check_positive("epsilon", args.epsilon)
    delta = check_open_unit("delta", args.delta)
    relation = common.neighbouring(args)
    make_event = common.make_event_factory(args)
    if args.mechanism == "gaussian":
        if args.sampling == "none":
            # a factory, not the name, so that the PLD's queries refine to --target-width
            accountant = args.accountant if args.accountant == "analytic" else common.accountant_maker(args)
            return calibrate_gaussian_sigma(
                epsilon, delta, args.count, args.sensitivity, accountant, relation, rtol=args.rtol
            )
        exact = math.sqrt(args.count) * gaussian_sigma(epsilon, delta, args.sensitivity)
        lower, upper, increasing = exact / 16.0, exact, True
    elif args.mechanism == "laplace":
        basic = args.count * args.sensitivity / epsilon  # basic composition of count ε₀-DP steps
        lower, upper, increasing = basic / 64.0, basic, True
    elif args.mechanism in common.sparse_vector.MECHANISMS:
        # Laplace SVT at scale B is (1 + 2c)/B-DP per run; Gaussian: its zCDP with every query shifted
        cutoff = args.cutoff or 1
        queries = args.max_queries or cutoff
        basic = args.count * (1.0 + 2.0 * cutoff) / epsilon
        if args.noise == "gaussian":
            basic = math.sqrt(args.count * (0.5 + 2.0 * queries) * 4.0 * math.log(1.0 / delta)) / epsilon
        lower, upper, increasing = basic / 64.0, basic, True
    elif args.mechanism in common.peer.MECHANISMS:
        lower, upper, increasing = common.peer.bracket(args, epsilon)
    else:
        lower, upper, increasing = epsilon / args.count, epsilon * 4.0, False
    if not sys.float_info.min <= lower <= upper <= sys.float_info.max:
        raise ValueError(f"--epsilon={args.epsilon:g} at --delta={args.delta:g} puts the search for "
                         f"--{common.parameter_name(args)} at [{lower:g}, {upper:g}], outside the normal floats: give "
                         f"a target that needs a representable amount of noise")
    return calibrate(
        make_event,
        common.accountant_maker(args),
        target_epsilon=epsilon,
        target_delta=delta,
        lower=lower,
        upper=upper,
        increasing_privacy=increasing,
        rtol=args.rtol,
        neighbouring=relation,
    )


def run(args: argparse.Namespace) -> int:
    common.check_common(args)
    with common.quiet_float_warnings():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    result = _calibrate(args)
    name = common.parameter_name(args)
    accounting = result.accounting
    payload = {
        **accounting.to_dict(),
        name: result.parameter,
        "parameter": result.parameter,
        "parameter_name": name,
        "unsafe_parameter": result.unsafe_parameter,
        "target_epsilon": result.target_epsilon,
        "rtol": result.rtol,
        "calibration_method": result.method,
        "evaluations": result.evaluations,
        "mechanism": args.mechanism,
        "count": args.count,
        "sampling": args.sampling,
        "event": common.make_event_factory(args)(result.parameter).to_dict(),
    }
    interval = common.interval_line(accounting, args.target_width)
    if accounting.epsilon_lower is not None:
        payload["certified_width"] = accounting.epsilon - accounting.epsilon_lower
    shown = common.fmt_down(result.parameter) if name == "epsilon0" else common.fmt_up(result.parameter)  # ε₀: larger is weaker
    lines = [
        f"{name} = {shown}  ({common.describe(args)})",
        f"  gives epsilon <= {common.fmt_up(accounting.epsilon)} (target {args.epsilon:g}) at delta = {args.delta:g}",
        f"  accountant {accounting.accountant} ({accounting.neighbouring.value}): {accounting.method}",
        *([f"  {interval}"] if interval else []),
        f"  calibration: {result.method}",
    ]
    common.emit(payload, "\n".join(lines), args.json)
    return 0
