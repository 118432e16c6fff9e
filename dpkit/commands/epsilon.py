"""``dpkit epsilon``: the ε a mechanism, repeated and subsampled, spends at a given δ.

Examples (see ``docs/calibration.md``)::

    dpkit epsilon --mechanism gaussian --sigma 10 --count 100 --delta 1e-5 --accountant rdp --json
    dpkit epsilon --mechanism gaussian --sigma 1.1 --sampling poisson --rate 0.01 --count 10000 --delta 1e-5 --compare
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from dpkit._progress import progress
from dpkit.accounting.base import AccountingResult, UnsupportedEventError
from dpkit.commands import _accounting_args as common

COMPARED = ("analytic", "zcdp", "rdp", "pld", "gdp", "approx")
"""Accountants tried by ``--compare`` (those that do not apply to the event are skipped)."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "epsilon",
        help="epsilon spent by a (subsampled, repeated) mechanism at a given delta",
        description="Compute the (epsilon, delta) guarantee of a mechanism repeated --count times.",
    )
    common.add_arguments(parser, calibrating=False)
    parser.add_argument(
        "--compare", action="store_true", help="one line per applicable accountant (analytic, zcdp, rdp, pld, gdp, approx)"
    )
    parser.set_defaults(func=run)


def _parameter(args: argparse.Namespace) -> tuple[str, float]:
    wanted = common.parameter_name(args)
    for name in common.PARAMETER_OF.values():
        value = getattr(args, name)
        if name != wanted and value is not None:
            raise ValueError(f"--{name} does not apply to --mechanism {args.mechanism} (it takes --{wanted})")
    value = getattr(args, wanted)
    if value is None:
        raise ValueError(f"--mechanism {args.mechanism} needs --{wanted}")
    return wanted, value


def _line(result: AccountingResult) -> str:
    text = f"{result.accountant:>8}: epsilon <= {common.fmt_up(result.epsilon)}"
    if result.epsilon_lower is not None:
        text += f"  (true epsilon >= {common.fmt_down(result.epsilon_lower)})"
    if result.order is not None:
        text += f"  order {result.order:.4g}"
    return text


def run(args: argparse.Namespace) -> int:
    common.check_common(args)
    with common.quiet_float_warnings():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    name, value = _parameter(args)
    event = common.make_event_factory(args)(value)
    relation = common.neighbouring(args)
    context = {
        "mechanism": args.mechanism,
        name: value,
        "count": args.count,
        "sampling": args.sampling,
        "event": event.to_dict(),
    }
    header = f"{common.describe(args, name, value)}; {relation.value}; delta = {args.delta:g}"
    if args.compare:
        results, skipped = [], {}
        for accountant in progress(COMPARED, desc="accountants", quiet=args.json):
            try:
                instance = common.accountant_maker(args, accountant)()
                results.append(instance.compose(event).get_epsilon(args.delta))
            except UnsupportedEventError as error:
                skipped[accountant] = error.reason
            except (ValueError, ArithmeticError) as error:
                skipped[accountant] = str(error).splitlines()[0] if str(error) else type(error).__name__
        if not results:
            raise ValueError(f"no accountant supports this event: {skipped}")
        payload = {**context, "delta": args.delta, "results": [r.to_dict() for r in results], "skipped": skipped}
        text = "\n".join([header, *(_line(r) for r in results),
                          *(f"{name:>8}: not applicable: {reason}" for name, reason in skipped.items())])
        common.emit(payload, text, args.json)
        return 0
    accountant = common.accountant_maker(args)()
    result = accountant.compose(event).get_epsilon(args.delta)
    payload = {**result.to_dict(), **context}
    interval = common.interval_line(result, args.target_width)
    if result.epsilon_lower is not None:
        payload["certified_width"] = result.epsilon - result.epsilon_lower
    advice = []
    if math.isinf(result.epsilon) and result.accountant == "pld":
        advice.append("          note: PLD gives no finite bound here (its grid could not resolve the loss, e.g. after "
                      "coarsening for a very long run); try --accountant rdp, which handles any count")
    text = "\n".join([header, _line(result), *([f"          {interval}"] if interval else []),
                      f"          {result.method}", *(f"          note: {n}" for n in result.notes
                        if not (interval and n.startswith("certified interval"))),
                      *advice])
    common.emit(payload, text, args.json)
    return 0
