"""``dpkit audit``'s options and run: check the options, resolve the target and its pairs, audit
(or search, or audit a registered algorithm), print the result and return the exit code."""

from __future__ import annotations

import argparse
import contextlib
import math
from typing import Any, Callable

from dpkit._validation import check_integer, check_nonnegative, check_positive, check_unit_interval
from dpkit.audit import DEFAULT_SAMPLES, audit
from dpkit.audit.runner import MechanismError, WorkerDiedError
from dpkit.commands.audit.algorithm import add_arguments as add_algorithm_arguments
from dpkit.commands.audit.algorithm import run_algorithm
from dpkit.commands.audit.options import check_options, library_keywords, samples_option
from dpkit.commands.audit.output import print_result
from dpkit.commands.audit.pairs import PATTERN_NAMES, pairs_digest
from dpkit.commands.audit.progress import ProgressBar
from dpkit.commands.audit.search import add_arguments as add_search_arguments
from dpkit.commands.audit.search import describe_search, run_search
from dpkit.commands.audit.targets import BUILTINS, resolve_pairs, resolve_target
from dpkit.commands.errors import EXIT_OK, EXIT_REFUTED, UserCodeError
from dpkit.commands.option_names import options_named
from dpkit.commands.user_code import UserCodeExit, current_directory_importable, stdout_to_stderr, user_frames

__all__ = ["register", "run", "DEFAULT_BATCH_TIMEOUT"]

DEFAULT_BATCH_TIMEOUT = 600.0
"""Seconds one batch of a mechanism audit may take unless ``--batch-timeout`` says otherwise."""

def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "audit", help="test a claimed (epsilon, delta) of a mechanism; print an empirical epsilon lower bound",
        description="Sample a mechanism on neighbouring inputs and test its claimed (epsilon, delta). "
                    "--mechanism module:function imports and runs that function (the current directory is "
                    "importable, as with python -m) and needs --pairs or --pairs-file. Exit codes: 0 no violation "
                    "found, 3 the claim was refuted (also with --json), 1 run-time failure (the mechanism raised or "
                    "timed out), 2 usage error, 130 interrupted.",
    )
    parser.add_argument("--mechanism", help=f"one of {', '.join(BUILTINS)}, or module:function (required unless --algorithm)")
    parser.add_argument("--claimed-epsilon", type=float, help="required unless --algorithm")
    parser.add_argument("--claimed-delta", type=float, help="claimed delta (default 0)")
    parser.add_argument("--mechanism-epsilon", type=float, help="epsilon the built-in is calibrated to (default: claimed)")
    parser.add_argument("--mechanism-delta", type=float, help="delta of the built-in gaussian (default: claimed)")
    parser.add_argument("--continuous-noise", action="store_true", default=None,
                        help="built-in mechanisms: numpy's continuous samplers (float_safe=False), which are not "
                             "private as executed, instead of the default float-safe ones (outputs rounded exactly "
                             "to a power-of-two lattice, comparisons decided on the exact reals)")
    parser.add_argument("--sensitivity", type=float, help="query sensitivity / pattern step (default 1)")
    parser.add_argument("--threshold", type=float, help="svt and above-threshold: threshold T (default 1)")
    parser.add_argument("--cutoff", type=int, help="svt: cut-off c (default 1)")
    parser.add_argument("--noise", choices=("laplace", "exponential", "gumbel"), help="rnm: noise (default laplace)")
    parser.add_argument("--pairs", metavar="NAME",
                        help=f"neighbouring inputs: {', '.join(PATTERN_NAMES)} (StatDP patterns), or module:NAME (a "
                             f"list of [D, D'] pairs, or a function returning one); default per built-in, required "
                             f"for module:function")
    parser.add_argument("--pairs-file", metavar="FILE",
                        help="a JSON list of [D, D'] pairs, each input a list of numbers")
    parser.add_argument("--scalar", action="store_true", default=None,
                        help="module:function is function(database, rng) returning one output (a Python loop: slow)")
    parser.add_argument("--length", type=int, help="number of query answers in the patterns (default 10)")
    parser.add_argument("--samples", type=samples_option, help="total mechanism samples, or auto (default 10^7)")
    parser.add_argument("--float-bits", action=argparse.BooleanOptionalAction, default=None,
                        help="events on the bits of float outputs (ulp grid, last bits, lattice relative to the "
                             "query answer), selected like any other event at no extra error budget: on by default "
                             "(--algorithm: off, the papers' claims are in exact arithmetic); --no-float-bits audits "
                             "the mechanism in exact arithmetic (its values only)")
    parser.add_argument("--power", type=float,
                        help="--samples auto: the power to refute the claim the confirmation is sized for (default 0.8)")
    parser.add_argument("--goal", choices=("verdict", "bound"),
                        help="--samples auto: verdict (default) confirms on the fewest outputs that refute the claim "
                             "and says what the default budget would certify; bound spends the default budget on "
                             "the tightest bound")
    parser.add_argument("--float-events", action="store_true", default=None,
                        help="also replay the sampler for outputs producible on one input only (spends half the "
                             "error budget if the replay runs; if it cannot, the result says so and spends none)")
    parser.add_argument("--assumption", choices=("gaussian",),
                        help="gaussian: bound mu of a Gaussian trade-off curve and report epsilon at the claimed delta "
                             "(valid only if the curve is Gaussian; needs --claimed-delta > 0)")
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int,
                        help="processes (default: timed pilot; all available cores when one output takes 50 us or "
                             "more or the run 10 s or more; results do not depend on it)")
    parser.add_argument("--sequential", action="store_true", help="anytime-valid mode that may stop early")
    parser.add_argument("--batch-timeout", type=float, metavar="SECONDS",
                        help=f"fail if one batch of the mechanism takes longer (default {DEFAULT_BATCH_TIMEOUT:g})")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bar (a long run's time estimate and a heartbeat line every minute still come)")
    parser.add_argument("--json", action="store_true", help="print a JSON object")
    add_search_arguments(parser)  # --search (dpkit/commands/audit/search.py)
    add_algorithm_arguments(parser)  # --algorithm NAME (dpkit/commands/audit/algorithm.py)
    parser.set_defaults(func=run, variant=None)  # --variant applies to --algorithm only: None unless given


def _uses_user_code(args: argparse.Namespace) -> bool:
    return ":" in args.mechanism or (args.pairs is not None and ":" in args.pairs)


def _run(args: argparse.Namespace) -> int:
    check_options(args)
    if getattr(args, "algorithm", None):  # algorithm audits: dpkit/commands/audit/algorithm.py
        return run_algorithm(args)
    check_nonnegative("claimed_epsilon", args.claimed_epsilon)
    check_unit_interval("claimed_delta", args.claimed_delta, include_one=False)
    check_positive("--sensitivity", args.sensitivity)
    check_integer("--length", args.length, minimum=1)
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    if args.power is not None and args.samples != "auto":
        raise ValueError("--power applies to --samples auto only (it sizes the confirmation)")
    if getattr(args, "goal", None) is not None and args.samples != "auto":
        raise ValueError("--goal applies to --samples auto only (it sizes the confirmation)")
    if args.power is not None and not 0.0 < args.power < 1.0:
        raise ValueError(f"--power must be in (0, 1), got --power={args.power}")
    timeout = DEFAULT_BATCH_TIMEOUT if args.batch_timeout is None else args.batch_timeout
    if not (timeout > 0 and math.isfinite(timeout)):
        raise ValueError(f"--batch-timeout must be in (0, inf) seconds, got --batch-timeout={args.batch_timeout}")
    # the user's module (and the worker processes that unpickle its function) import from the current directory
    importable = current_directory_importable() if _uses_user_code(args) else contextlib.nullcontext()
    search: dict[str, Any] | None = None
    digest: str | None = None
    with importable, stdout_to_stderr():  # the user's prints go to stderr (workers' too): --json stays one object
        target, family, description = resolve_target(args)
        if args.search:
            family = args.pairs or family
            samples = DEFAULT_SAMPLES if args.samples is None else args.samples
            bar = ProgressBar(args.quiet or args.json, args.workers)
            try:
                result, search = run_search(target, args, family, samples, bar.estimate)
            except MechanismError as error:
                raise _mechanism_failed(args, error) from None
            finally:
                bar.close()
            pairs_name = family
            relation = describe_search(family, tuple(search["lengths"]), args.sensitivity)
        else:
            result, pairs_name, relation, digest = _run_audit(args, target, family, timeout)
    print_result(args, result, description, pairs_name, relation, search, digest)
    return EXIT_REFUTED if result.violation else EXIT_OK


def _mechanism_failed(args: argparse.Namespace, error: MechanismError) -> UserCodeError:
    if isinstance(error, WorkerDiedError):  # a signal, os._exit or a crash in C code, in a worker process
        return UserCodeError(f"the mechanism {args.mechanism} {error}")
    cause = error.__cause__
    if isinstance(cause, UserCodeExit):  # sys.exit / KeyboardInterrupt in the user's code: one line
        return UserCodeError(str(cause))
    first, prefix = (str(error).splitlines() or [""])[0], f"the mechanism raised {UserCodeExit.__name__}: "
    if first.startswith(prefix):  # the same, in a worker process
        return UserCodeError(first[len(prefix):])
    if not isinstance(cause, Exception) or type(cause).__name__ == "_RemoteTraceback":
        return UserCodeError(f"--mechanism {args.mechanism}: {error}")
    return UserCodeError(f"--mechanism {args.mechanism}: the mechanism raised {type(cause).__name__}: {cause}"
                        f"{user_frames(cause)}")


def run(args: argparse.Namespace) -> int:
    """``dpkit audit``: errors from the library name the options the user typed."""
    with options_named(AUDIT_OPTION_OF):
        return _run(args)


AUDIT_OPTION_OF = {"claimed_epsilon": "--claimed-epsilon", "claimed_delta": "--claimed-delta",
                   "confidence": "--confidence", "samples": "--samples", "rng": "--seed",
                   "batch_timeout": "--batch-timeout", "workers": "--workers", "power": "--power"}
"""The option behind each :func:`dpkit.audit.audit` argument, for error messages."""


def _run_audit(args: argparse.Namespace, target: Callable[..., Any], family: str | None,
               timeout: float) -> tuple[Any, str, str, str | None]:
    """Audit ``target`` on the pairs the options name: the result, the pairs' name, their relation and,
    for the user's own pairs, their digest."""
    pairs, pairs_name, relation = resolve_pairs(args, family)
    own = args.pairs_file is not None or (args.pairs is not None and ":" in args.pairs)
    digest = pairs_digest(pairs) if own else None
    planned = DEFAULT_SAMPLES if args.samples is None else args.samples if isinstance(args.samples, int) else None
    bar = ProgressBar(args.quiet or args.json, args.workers, planned)
    keywords = library_keywords(args, bar.estimate)
    if args.power is not None:
        keywords["power"] = args.power
    if getattr(args, "goal", None) is not None:
        keywords["goal"] = args.goal
    try:  # the workers (--workers, or the audit's own choice after its pilot) run in processes it starts
        result = audit(target, pairs, claimed_epsilon=args.claimed_epsilon, claimed_delta=args.claimed_delta,
                       confidence=args.confidence, samples=args.samples, rng=args.seed, workers=args.workers,
                       sequential=args.sequential, progress=bar, batch_timeout=timeout, **keywords)
    except MechanismError as error:
        raise _mechanism_failed(args, error) from None
    finally:
        bar.close()
    return result, pairs_name, relation, digest
