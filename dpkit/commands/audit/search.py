"""``dpkit audit --search``: search neighbouring vectors of query answers, then confirm the best pair.

Instead of the fixed StatDP patterns, :func:`dpkit.audit.search.audit_searched` screens many
candidate pairs with ``--search-budget`` outputs (successive halving with mutation, in the
spirit of DP-Finder, Bichsel et al. 2018, and Delta-Siege, Lokna et al. 2023) and audits the
best one on ``--samples`` *fresh* outputs, seeded independently of the search: the confirmed
bound holds with probability ≥ ``--confidence`` however the pair was chosen. The search's
own screening estimate is shown, labelled as not certified.

``--pairs NAME`` names the relation searched (``statdp``: every answer may move by Δ,
``statdp-one``: one answer moves, ``statdp-monotone``: all move one way); a user function
must name it, as for fixed pairs. ``--search-lengths`` lists the vector lengths tried.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable

from dpkit.audit.search import audit_searched
from dpkit.commands.audit.pairs import PATTERN_NAMES

__all__ = ["DEFAULT_LENGTHS", "add_arguments", "check_search_options", "describe_search", "lengths_option",
           "run_search"]

DEFAULT_LENGTHS = (5, 10, 20, 40)
"""Vector lengths searched unless ``--search-lengths`` says otherwise."""

SEARCH_OPTIONS = ("search_budget", "search_lengths")


def lengths_option(text: str) -> tuple[int, ...]:
    """argparse type of ``--search-lengths``: comma-separated integers ≥ 1.

    >>> lengths_option("10,20")
    (10, 20)
    """
    try:
        lengths = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be comma-separated integers >= 1 (e.g. 10,20), got {text!r}") from None
    if not lengths or min(lengths) < 1:
        raise argparse.ArgumentTypeError(f"must be comma-separated integers >= 1 (e.g. 10,20), got {text!r}")
    return lengths


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--search``, ``--search-budget`` and ``--search-lengths`` to the ``audit`` parser."""
    group = parser.add_argument_group("searching for inputs (instead of fixed pairs)")
    group.add_argument("--search", action="store_true", default=None,
                       help="search vectors of query answers for the most revealing pair, then confirm it on "
                            "--samples fresh outputs (--pairs NAME gives the relation searched)")
    group.add_argument("--search-budget", type=int, metavar="N",
                       help="outputs the search may use (default: --samples; the confirmation uses --samples more)")
    group.add_argument("--search-lengths", type=lengths_option, metavar="L1,L2",
                       help=f"vector lengths searched (default {','.join(map(str, DEFAULT_LENGTHS))})")


def check_search_options(args: argparse.Namespace) -> None:
    """Refuse options that do not combine with ``--search`` (or search options without it)."""
    if not args.search:
        given = [o for o in SEARCH_OPTIONS if getattr(args, o, None) is not None]
        if given:
            raise ValueError(f"{', '.join('--' + o.replace('_', '-') for o in given)} appl"
                             f"{'ies' if len(given) == 1 else 'y'} to --search only")
        return
    conflicts = {
        "--pairs-file": args.pairs_file is not None,
        "--pairs module:NAME": args.pairs is not None and ":" in args.pairs,
        "--length (use --search-lengths)": args.length is not None,
        "--sequential": bool(args.sequential),
        "--float-events": bool(args.float_events),
        "--samples auto": args.samples == "auto",
        "--power": getattr(args, "power", None) is not None,
        "--batch-timeout": args.batch_timeout is not None,
        "--assumption": args.assumption is not None,
    }
    given = [name for name, present in conflicts.items() if present]
    if given:
        raise ValueError(f"{', '.join(given)} do{'es' if len(given) == 1 else ''} not combine with --search")
    if args.search_budget is not None and args.search_budget < 1:
        raise ValueError(f"--search-budget must be an integer >= 1, got --search-budget={args.search_budget}")


def describe_search(family: str, lengths: tuple[int, ...], sensitivity: float) -> str:
    """The relation searched, in words."""
    moves = {"componentwise": "every answer may move", "one": "exactly one answer moves",
             "monotone": "every answer may move, all in one direction"}[PATTERN_NAMES[family]]
    return (f"searched: vectors of {', '.join(map(str, lengths))} query answers in which {moves} by at most "
            f"{sensitivity:g} (--pairs {family} --search)")


def run_search(target: Callable[..., Any], args: argparse.Namespace, family: str, samples: int,
               on_estimate: Callable[[float], None] | None = None) -> tuple[Any, dict[str, Any]]:
    """Search and confirm; returns the confirming :class:`~dpkit.audit.AuditResult` and the search summary.
    ``on_estimate`` receives the run-time estimates of the search, then of the confirmation."""
    lengths = args.search_lengths or DEFAULT_LENGTHS
    budget = samples if args.search_budget is None else args.search_budget
    found = audit_searched(target, claimed_epsilon=args.claimed_epsilon, claimed_delta=args.claimed_delta,
                           budget=budget, samples=samples, rng=args.seed, confidence=args.confidence,
                           lengths=lengths, sensitivity=args.sensitivity, relation=PATTERN_NAMES[family],
                           float_bits=args.float_bits is not False, workers=args.workers,
                           on_estimate=on_estimate)
    search = found.search
    summary = {
        "pair_label": search.pair.label,
        "screening_estimate": search.screening_estimate,
        "screening_estimate_certified": False,
        "screening_samples": search.screening_samples,
        "samples": search.samples,
        "evaluated": search.evaluated,
        "rounds": search.rounds,
        "budget": budget,
        "lengths": list(lengths),
        "ranking": [list(item) for item in search.ranking],
    }
    return found.audit, summary
