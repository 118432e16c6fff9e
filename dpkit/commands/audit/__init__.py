"""``dpkit audit``: test a mechanism's claimed (ε, δ) and print an empirical ε lower bound.

Examples (see ``docs/audit.md``)::

    dpkit audit --mechanism rnm --claimed-epsilon 0.7 --json
    dpkit audit --mechanism svt --cutoff 2 --claimed-epsilon 1 --samples 2000000 --workers 2
    dpkit audit --mechanism mypackage.mech:leaky_sum --pairs statdp-one --claimed-epsilon 1 --json
    dpkit audit --mechanism mymech:count --scalar --pairs-file pairs.json --claimed-epsilon 1

A built-in name runs the corresponding :mod:`dpkit.mechanisms` class calibrated to
``--mechanism-epsilon`` (default: the claimed ε), so a correct mechanism should pass;
``module:function`` imports ``function(database, n, rng)`` (``--scalar``: ``function(database,
rng)`` returning one output), with the current directory importable as under ``python -m``
(:mod:`dpkit.commands.user_code`). A user function needs its neighbouring inputs
(``--pairs NAME``, ``--pairs module:NAME`` or ``--pairs-file``, :mod:`dpkit.commands.audit.pairs`):
dpkit cannot know which inputs the user's claim calls neighbours, and a wrong default either
refutes a correct mechanism or misses a violation. The output always states the relation
and both inputs of the witness pair. ``--algorithm NAME`` is
:mod:`dpkit.commands.audit.algorithm`. Exit code 3 (:data:`~dpkit.commands.errors.EXIT_REFUTED`)
when the claim is refuted, in text and ``--json`` modes alike.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import threading
import time
from typing import Any, Callable

from dpkit import mechanisms as m  # the commands may use mechanisms; dpkit.audit never does
from dpkit._validation import check_integer, check_nonnegative, check_positive, check_unit_interval
from dpkit.audit import DEFAULT_SAMPLES, Pair, audit, from_scalar
from dpkit.audit.runner import MechanismError
from dpkit.commands.audit.algorithm import add_arguments as add_algorithm_arguments
from dpkit.commands.audit.algorithm import run_algorithm
from dpkit.commands.audit.options import library_keywords, samples_option
from dpkit.commands.option_names import options_named
from dpkit.commands.audit.output import estimate_line, print_result
from dpkit.commands.audit.pairs import (
    PATTERN_NAMES, describe_pairs, describe_patterns, load_pairs_file, load_pairs_module, pairs_digest, pattern_pairs,
)
from dpkit.commands.audit.search import add_arguments as add_search_arguments
from dpkit.commands.audit.search import check_search_options, describe_search, run_search
from dpkit.commands.errors import EXIT_OK, EXIT_REFUTED, UserCodeError
from dpkit.commands.user_code import (
    UserCodeExit, UserFunction, current_directory_importable, diverted_stdout, load_attribute, user_frames,
)

PAIR_NAMES = tuple(PATTERN_NAMES)


def _builtin(name: str, args: argparse.Namespace) -> tuple[Any, str]:
    """(dpkit.mechanisms object, default pair family) for a built-in name."""
    eps = args.mechanism_epsilon if args.mechanism_epsilon is not None else args.claimed_epsilon
    eps_option = "--mechanism-epsilon" if args.mechanism_epsilon is not None else "--claimed-epsilon"
    delta = args.mechanism_delta if args.mechanism_delta is not None else args.claimed_delta
    sens = args.sensitivity
    table: dict[str, Callable[[], tuple[Any, str]]] = {
        "laplace": lambda: (m.LaplaceMechanism.from_epsilon(eps, sens, float_safe=True) if args.float_safe
                            else m.LaplaceMechanism(scale=sens / eps, sensitivity=sens), "statdp-one"),
        "gaussian": lambda: (m.GaussianMechanism.from_epsilon_delta(eps, delta, sensitivity=sens,
                                                                    float_safe=bool(args.float_safe)), "statdp-one"),
        "rnm": lambda: (m.ReportNoisyMax(epsilon=eps, sensitivity=sens, noise=args.noise), "statdp"),
        "exponential": lambda: (m.ExponentialMechanism(epsilon=eps, sensitivity=sens), "statdp"),
        "permute-and-flip": lambda: (m.PermuteAndFlip(epsilon=eps, sensitivity=sens), "statdp"),
        "svt": lambda: (m.SparseVector.from_epsilon(eps, args.threshold, args.cutoff, sens), "statdp"),
        "above-threshold": lambda: (m.AboveThreshold(epsilon=eps, threshold=args.threshold, sensitivity=sens), "statdp"),
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


# Options of `dpkit audit` that apply only to some targets: option -> (the built-ins it applies to, default).
# Their parser default is None, so that an option the user gave where it does not apply is an error.
_MECHANISM_OPTIONS: dict[str, tuple[tuple[str, ...], Any]] = {
    "noise": (("rnm",), "laplace"),
    "threshold": (("svt", "above-threshold"), 1.0),
    "cutoff": (("svt",), 1),
    "mechanism_delta": (("gaussian",), None),
    "float_safe": (("laplace", "gaussian"), False),
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


def _check_options(args: argparse.Namespace) -> None:
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
    if args.float_safe:
        if args.length not in (None, 1):
            raise ValueError(f"--float-safe releases one scalar per call (its guarantee is for one scalar query): "
                             f"--length must be 1, got --length {args.length}")
        args.length = 1
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


BUILTINS = ("laplace", "gaussian", "rnm", "exponential", "permute-and-flip", "svt", "above-threshold")


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


HEARTBEAT_SECONDS = 60.0
"""Without a progress bar (``--quiet``, or stderr not a terminal), a line on stderr this often."""

DEFAULT_BATCH_TIMEOUT = 600.0
"""Seconds one batch of a mechanism audit may take unless ``--batch-timeout`` says otherwise."""


ESTIMATE_NOTICE_SECONDS = 20.0
"""The run-time estimate is printed when the whole audit should take at least this long."""


class _Bar:
    """Progress on stderr: a bar on a terminal without ``--quiet``; otherwise a heartbeat line
    every :data:`HEARTBEAT_SECONDS` (from a timer thread, so a slow batch cannot silence it).

    After the first batch the library reports its estimate of the whole run's time
    (``on_estimate``); if it is at least :data:`ESTIMATE_NOTICE_SECONDS`, prints it with advice (``--samples``); see
    :meth:`estimate` for revisions.
    """

    def __init__(self, quiet: bool, workers: int | None = 1, planned: int | None = None):
        self.on = not quiet and getattr(sys.stderr, "isatty", lambda: False)()
        self.last = 0.0
        self.done, self.total = 0, 0
        self.start = time.monotonic()
        self.workers = workers
        self.planned = planned
        self.estimated: float | None = None
        self.printed: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if not self.on:
            self._thread = threading.Thread(target=self._heartbeat, name="dpkit-audit-heartbeat", daemon=True)
            self._thread.start()

    def _heartbeat(self) -> None:
        stream = sys.stderr  # the stream of the caller (tests redirect it)
        while not self._stop.wait(HEARTBEAT_SECONDS):
            elapsed = time.monotonic() - self.start
            try:
                stream.write(f"dpkit audit: still running after {elapsed:.0f} s: {self.done}/{self.total} samples\n")
                stream.flush()
            except (OSError, ValueError):  # the caller closed its stream (e.g. a pipe): nobody is listening
                return

    def estimate(self, seconds_total: float) -> None:
        """Record an estimate of the whole audit's run time. Print the first one that is long, and
        a later one (e.g. when confirmation starts) if it differs from the printed one by half or more."""
        self.estimated = float(seconds_total)
        if self.estimated < ESTIMATE_NOTICE_SECONDS:
            return
        if self.printed is not None and abs(self.estimated - self.printed) < 0.5 * self.printed:
            return
        line = estimate_line(self.estimated, self.total or self.planned, self.workers)
        if self.printed is not None:
            line = line.replace(": ", ": revised estimate: ", 1)
        sys.stderr.write(("\n" if self.on else "") + line + "\n")
        sys.stderr.flush()
        self.printed = self.estimated

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        if not self.on or (time.monotonic() - self.last < 0.1 and done < total):
            return
        self.last = time.monotonic()
        filled = min(30, int(30 * done / max(total, 1)))
        sys.stderr.write(f"\raudit [{'#' * filled}{'.' * (30 - filled)}] {done}/{total} samples")
        sys.stderr.flush()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
        if self.on:
            sys.stderr.write("\n")


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
    parser.add_argument("--float-safe", action="store_true", default=None,
                        help="built-in laplace/gaussian: the float-safe form (snapping; the discrete Gaussian on a "
                             "power-of-two grid) instead of the continuous one, which is not private as executed")
    parser.add_argument("--sensitivity", type=float, help="query sensitivity / pattern step (default 1)")
    parser.add_argument("--threshold", type=float, help="svt and above-threshold: threshold T (default 1)")
    parser.add_argument("--cutoff", type=int, help="svt: cut-off c (default 1)")
    parser.add_argument("--noise", choices=("laplace", "exponential", "gumbel"), help="rnm: noise (default laplace)")
    parser.add_argument("--pairs", metavar="NAME",
                        help=f"neighbouring inputs: {', '.join(PAIR_NAMES)} (StatDP patterns), or module:NAME (a "
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
    _check_options(args)
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
    if args.power is not None and not 0.0 < args.power < 1.0:
        raise ValueError(f"--power must be in (0, 1), got --power={args.power}")
    timeout = DEFAULT_BATCH_TIMEOUT if args.batch_timeout is None else args.batch_timeout
    if not (timeout > 0 and math.isfinite(timeout)):
        raise ValueError(f"--batch-timeout must be in (0, inf) seconds, got --batch-timeout={args.batch_timeout}")
    # the user's module (and the worker processes that unpickle its function) import from the current directory
    importable = current_directory_importable() if _uses_user_code(args) else contextlib.nullcontext()
    search: dict[str, Any] | None = None
    digest: str | None = None
    with importable, diverted_stdout():  # the user's prints go to stderr: --json stays one object
        target, family, description = resolve_target(args)
        if args.search:
            family = args.pairs or family
            samples = DEFAULT_SAMPLES if args.samples is None else args.samples
            bar = _Bar(args.quiet or args.json, args.workers)
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
    bar = _Bar(args.quiet or args.json, args.workers, planned)
    keywords = library_keywords(args, bar.estimate)
    if args.power is not None:
        keywords["power"] = args.power
    try:  # the workers (--workers, or the audit's own choice after its pilot) run in processes it starts
        result = audit(target, pairs, claimed_epsilon=args.claimed_epsilon, claimed_delta=args.claimed_delta,
                       confidence=args.confidence, samples=args.samples, rng=args.seed, workers=args.workers,
                       sequential=args.sequential, progress=bar, batch_timeout=timeout, **keywords)
    except MechanismError as error:
        raise _mechanism_failed(args, error) from None
    finally:
        bar.close()
    return result, pairs_name, relation, digest
