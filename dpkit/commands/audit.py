"""``dpkit audit``: test a mechanism's claimed (ε, δ) and print an empirical ε lower bound.

Examples (see ``docs/audit.md``)::

    dpkit audit --mechanism rnm --claimed-epsilon 0.7 --json
    dpkit audit --mechanism svt --cutoff 2 --claimed-epsilon 1 --samples 2000000 --workers 2
    dpkit audit --mechanism mypackage.mech:leaky_sum --pairs statdp-one --claimed-epsilon 1 --json

A built-in name runs the corresponding :mod:`dpkit.mechanisms` class calibrated to
``--mechanism-epsilon`` (default: the claimed ε), so a correct mechanism should pass;
``module:function`` imports ``function(database, n, rng)``. The target is resolved by
:func:`resolve_target`, the single place a future ``--algorithm NAME`` plugs into.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib
import json
import math
import sys
import threading
import time
from typing import Any, Callable

from dpkit import mechanisms as m  # the commands may use mechanisms; dpkit.audit never does
from dpkit._validation import check_integer, check_nonnegative, check_positive, check_unit_interval
from dpkit.audit import StatDPPatterns, audit
from dpkit.audit.runner import MechanismError
from dpkit.commands.errors import EXIT_REFUTED, RunTimeError

from dpkit.commands.audit_algorithm import add_arguments as add_algorithm_arguments
from dpkit.commands.audit_algorithm import run_algorithm

PAIR_NAMES = ("statdp", "statdp-one", "statdp-monotone")
_RELATION = {"statdp": "componentwise", "statdp-one": "one", "statdp-monotone": "monotone"}


def _builtin(name: str, args: argparse.Namespace) -> tuple[Any, str]:
    """(dpkit.mechanisms object, default pair family) for a built-in name."""
    eps = args.mechanism_epsilon if args.mechanism_epsilon is not None else args.claimed_epsilon
    eps_option = "--mechanism-epsilon" if args.mechanism_epsilon is not None else "--claimed-epsilon"
    delta = args.mechanism_delta if args.mechanism_delta is not None else args.claimed_delta
    sens = args.sensitivity
    table: dict[str, Callable[[], tuple[Any, str]]] = {
        "laplace": lambda: (m.LaplaceMechanism(scale=sens / eps, sensitivity=sens), "statdp-one"),
        "gaussian": lambda: (m.GaussianMechanism.from_epsilon_delta(eps, delta, sensitivity=sens), "statdp-one"),
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
}
# Options that apply to mechanism audits only (never to --algorithm), with their defaults.
_MECHANISM_ONLY: dict[str, Any] = {
    "mechanism": None, "claimed_epsilon": None, "claimed_delta": 0.0, "mechanism_epsilon": None,
    "mechanism_delta": None, "sensitivity": 1.0, "threshold": None, "cutoff": None, "noise": None, "pairs": None,
    "length": 10, "sequential": False,
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


BUILTINS = ("laplace", "gaussian", "rnm", "exponential", "permute-and-flip", "svt", "above-threshold")


def resolve_target(args: argparse.Namespace) -> tuple[Callable[..., Any], str, str]:
    """The callable to audit, its default pair family and a description."""
    name = args.mechanism
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            target = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as error:
            raise ValueError(f"cannot load --mechanism {name!r}: {error}") from None
        if not callable(target):
            raise TypeError(f"--mechanism {name!r} is not callable")
        return target, "statdp", name
    mech, family = _builtin(name, args)
    return mech.as_audit_callable(), family, repr(mech)


HEARTBEAT_SECONDS = 60.0
"""Without a progress bar (``--quiet``, or stderr not a terminal), a line on stderr this often."""

DEFAULT_BATCH_TIMEOUT = 600.0
"""Seconds one batch of a mechanism audit may take unless ``--batch-timeout`` says otherwise."""


class _Bar:
    """Progress on stderr: a bar on a terminal without ``--quiet``; otherwise a heartbeat line
    every :data:`HEARTBEAT_SECONDS` (from a timer thread, so a slow batch cannot silence it)."""

    def __init__(self, quiet: bool):
        self.on = not quiet and getattr(sys.stderr, "isatty", lambda: False)()
        self.last = 0.0
        self.done, self.total = 0, 0
        self.start = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if not self.on:
            self._thread = threading.Thread(target=self._heartbeat, name="dpkit-audit-heartbeat", daemon=True)
            self._thread.start()

    def _heartbeat(self) -> None:
        stream = sys.stderr  # the stream of the caller (tests redirect it)
        while not self._stop.wait(HEARTBEAT_SECONDS):
            elapsed = time.monotonic() - self.start
            stream.write(f"dpkit audit: still running after {elapsed:.0f} s: {self.done}/{self.total} samples\n")
            stream.flush()

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
                    "--mechanism module:function imports and runs that function. Exit codes: 0 no violation found, "
                    "3 the claim was refuted, 1 run-time failure (the mechanism raised or timed out), "
                    "2 usage error, 130 interrupted.",
    )
    parser.add_argument("--mechanism", help=f"one of {', '.join(BUILTINS)}, or module:function (required unless --algorithm)")
    parser.add_argument("--claimed-epsilon", type=float, help="required unless --algorithm")
    parser.add_argument("--claimed-delta", type=float, help="claimed delta (default 0)")
    parser.add_argument("--mechanism-epsilon", type=float, help="epsilon the built-in is calibrated to (default: claimed)")
    parser.add_argument("--mechanism-delta", type=float, help="delta of the built-in gaussian (default: claimed)")
    parser.add_argument("--sensitivity", type=float, help="query sensitivity / pattern step (default 1)")
    parser.add_argument("--threshold", type=float, help="svt and above-threshold: threshold T (default 1)")
    parser.add_argument("--cutoff", type=int, help="svt: cut-off c (default 1)")
    parser.add_argument("--noise", choices=("laplace", "exponential", "gumbel"), help="rnm: noise (default laplace)")
    parser.add_argument("--pairs", choices=PAIR_NAMES, help="input patterns (default: per mechanism)")
    parser.add_argument("--length", type=int, help="number of query answers in the patterns (default 10)")
    parser.add_argument("--samples", type=int, help="total mechanism samples (default 10^7)")
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1, help="processes (results do not depend on it)")
    parser.add_argument("--sequential", action="store_true", help="anytime-valid mode that may stop early")
    parser.add_argument("--batch-timeout", type=float, metavar="SECONDS",
                        help=f"fail if one batch of the mechanism takes longer (default {DEFAULT_BATCH_TIMEOUT:g})")
    parser.add_argument("--quiet", action="store_true", help="no progress bar (a heartbeat line still comes every minute)")
    parser.add_argument("--json", action="store_true", help="print a JSON object")
    add_algorithm_arguments(parser)  # --algorithm NAME (dpkit/commands/audit_algorithm.py)
    parser.set_defaults(func=run, variant=None)  # --variant applies to --algorithm only: None unless given


def run(args: argparse.Namespace) -> int:
    _check_options(args)
    if getattr(args, "algorithm", None):  # algorithm audits: dpkit/commands/audit_algorithm.py
        return run_algorithm(args)
    check_nonnegative("claimed_epsilon", args.claimed_epsilon)
    check_unit_interval("claimed_delta", args.claimed_delta, include_one=False)
    check_positive("--sensitivity", args.sensitivity)
    check_integer("--length", args.length, minimum=1)
    if args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    if args.samples is not None and args.samples < 1:
        raise ValueError(f"--samples must be an integer >= 1, got --samples={args.samples}")
    timeout = DEFAULT_BATCH_TIMEOUT if args.batch_timeout is None else args.batch_timeout
    if not (timeout > 0 and math.isfinite(timeout)):
        raise ValueError(f"--batch-timeout must be in (0, inf) seconds, got --batch-timeout={args.batch_timeout}")
    target, family, description = resolve_target(args)
    family = args.pairs or family
    pairs = StatDPPatterns(length=args.length, relation=_RELATION[family], sensitivity=args.sensitivity)
    bar = _Bar(args.quiet or args.json)
    executor = concurrent.futures.ProcessPoolExecutor(args.workers) if args.workers > 1 else None
    try:
        result = audit(target, pairs, claimed_epsilon=args.claimed_epsilon, claimed_delta=args.claimed_delta,
                       confidence=args.confidence, samples=args.samples, rng=args.seed, executor=executor,
                       sequential=args.sequential, progress=bar, batch_timeout=timeout)
    except MechanismError as error:
        raise RunTimeError(f"--mechanism {args.mechanism}: {error}") from None
    finally:
        bar.close()
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
    status = EXIT_REFUTED if result.violation else 0
    if args.json:
        out = result.to_dict()
        out["mechanism"] = description
        out["pairs"] = family
        print(json.dumps(out))
        return status
    verdict = "VIOLATION: claim refuted" if result.violation else "no violation found"
    print(f"{description}: claimed ({args.claimed_epsilon:g}, {args.claimed_delta:g})-DP")
    print(f"epsilon lower bound {result.epsilon_lower_bound:.4f} at confidence {result.confidence:g} "
          f"(p = {result.p_value:.3g}): {verdict}")
    w = result.witness
    if "pair" in w:
        print(f"witness: pair {w['pair']['label']}, {w['event']['family']} event ({w['event']['shape']}), "
              f"counts {w['count_numerator']} vs {w['count_denominator']} of {w['samples_per_input']}")
    for note in result.notes:
        print(f"note: {note}")
    print(f"{result.samples} samples in {result.seconds:.1f} s")
    return status
