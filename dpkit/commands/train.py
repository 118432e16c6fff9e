"""``dpkit train``: train a registered algorithm and print its accuracy beside its privacy.

A thin layer over :func:`dpkit.algorithms.train`. Examples::

    dpkit train --algorithm dp-logreg --epsilon 1
    dpkit train --algorithm admm --data adult --agents 5 --iterations 30 --json
    dpkit train --algorithm dp-logreg --epsilon 1 --option step_size=2 --out run.json

``--data`` is ``adult`` (the packaged UCI Adult, default), ``builtin`` (statsmodels' Fair data),
``synthetic``, an Adult directory, or a CSV/LIBSVM file. ``--format csv|libsvm`` says how to
read a file (without it the extension must be ``.csv``, ``.libsvm`` or ``.svm``, and the output
says the format was taken from it); ``--label COLUMN`` names a CSV's label column by header name
or 0-based index (default: the last column; a header line is detected as a non-numeric first line).
A file's feature columns are scaled from one of: ``--bounds B1,LOW2:HIGH2,...`` (one public
range per feature column, B meaning [-B, B], mapped onto [-1, 1] and clipped);
``--public-scaling`` (the file's own column ranges, which the user declares public; a column
starting at 0 is divided by its maximum, the others centred); by default, ranges estimated from
the training rows with Gaussian noise charged to the run's ε (a tenth of its GDP μ²; see
:mod:`dpkit.algorithms.substrate.private_ranges`); or none (``--no-scaling``). Every row is then
scaled to norm <= 1, a per-record step. The output says which was used. ``--option KEY=VALUE`` (repeatable)
passes an algorithm option (values are read as JSON numbers/booleans where they parse, strings
otherwise). ``--out FILE`` writes the full result (model and history included) atomically; an
existing file is kept unless ``--force`` is given, and the path is checked before training. The
result is printed first: if the file cannot be written after all (a full disk, a permission or
read-only file system error), the error names the path, nothing is left behind, and the exit
code is 1.

Everything printed and written is covered by the printed ε, except the *diagnostics*: numbers
computed on the private training rows without noise (per-round training risk and dual sums, the
solver's largest gradient norm). ``--out`` writes them only with ``--diagnostics``, in a part
labelled "not covered by epsilon", and the text output then prints that part's final values
under the same label.

The text output puts the test accuracy next to the majority-class accuracy, and the ε the
accountant certifies for the run (record-level, over the ledger) next to the paper's claim. On
data with a ``bias`` column (every file, the built-in data) a private run ends with the
class-prior fallback (:mod:`dpkit.algorithms.substrate.prior_fallback`), and the ``model`` line
says whether the trained model or a constant prediction was returned.
``--json`` prints :meth:`~dpkit.algorithms.substrate.result.TrainingResult.to_dict` without the model
and history.

Every release draws float-safe noise by default (:mod:`dpkit.mechanisms.float_safe`), so the ε holds for
the doubles the run outputs; ``--continuous-noise`` is the explicit opt-out to numpy's continuous
samplers, and the run then carries the "not private as executed" note, naming each mechanism. A
release whose proof needs continuous noise and an exact minimiser (objective perturbation, as in
dvp-admm) carries that note too, with what the proof assumes.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
from typing import Any

from dpkit._progress import progress as progress_bar
from dpkit._threads import single_threaded_blas
from dpkit.mechanisms.float_safe import continuous_noise
from dpkit.algorithms.substrate.data import (
    ADULT_VARIANTS,
    DATA_FORMATS,
    file_format,
    is_data_file,
    load_dataset,
    names_data_not_file,
)
from dpkit.algorithms.substrate.evaluation import DIAGNOSTIC_LABEL
from dpkit.algorithms.registry import ALGORITHMS
from dpkit.algorithms.substrate.result import TrainingResult
from dpkit.algorithms import train
from dpkit.commands import strict_json
from dpkit.commands._accounting_args import check_numbers
from dpkit.commands.files import temp_name, write_new
from dpkit.commands.option_names import options_named

SUMMARY_OMITS = ("model", "history")
"""Fields of the full result left out of ``--json`` (they are in ``--out``)."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "train", help="train a (private) model on Adult, a file or the built-in data",
        description="Train a registered algorithm; prints test accuracy beside the majority class and the "
                    "certified epsilon beside the paper's claim.",
    )
    parser.add_argument("--algorithm", required=True, help="one of: " + ", ".join(ALGORITHMS))
    parser.add_argument("--data", default="adult",
                        help="'adult' (packaged UCI Adult, default), 'builtin', 'synthetic', an Adult directory, "
                             "or a CSV/LIBSVM file")
    parser.add_argument("--format", choices=DATA_FORMATS,
                        help="how to read a --data file (default: from its extension .csv/.libsvm/.svm, or refused)")
    parser.add_argument("--label", metavar="COLUMN",
                        help="label column of a CSV file: header name or 0-based index (default: the last column)")
    parser.add_argument("--bounds", metavar="B1,LOW2:HIGH2,...",
                        help="public range of each feature column of a --data file: B for [-B, B] or LOW:HIGH "
                             "(mapped onto [-1, 1], clipped)")
    parser.add_argument("--public-scaling", action="store_true",
                        help="map a --data file's columns onto [-1, 1] by their own ranges, declaring those public "
                             "(columns starting at 0 divided by their maximum)")
    parser.add_argument("--no-scaling", action="store_true",
                        help="use a --data file's columns as given (default: ranges estimated from the training rows "
                             "with noise, charged to epsilon)")
    parser.add_argument("--clip-quantile", type=float, metavar="Q",
                        help="with the default private scaling of a --data file: clip each column at private estimates "
                             "of its (1-Q)- and Q-quantiles (exponential mechanism, charged to epsilon), for "
                             "heavy-tailed columns; Q in (0.5, 1), e.g. 0.95")
    parser.add_argument("--encoding", default="104", choices=ADULT_VARIANTS, help="Adult encoding (d; default 104)")
    parser.add_argument("--epsilon", type=float, help="total privacy budget epsilon of the run (private algorithms)")
    parser.add_argument("--delta", type=float, help="total delta (default: the algorithm's)")
    parser.add_argument("--variant", help="algorithm variant (default: its first, 'corrected' for private ones)")
    parser.add_argument("--agents", type=int, help="number of agents (default: the algorithm's)")
    parser.add_argument("--iterations", type=int, help="planned rounds (default: the algorithm's rule)")
    parser.add_argument("--seed", type=int, default=0, help="seed of split, partition, graph and noise (default 0)")
    parser.add_argument("--n-train", type=int, help="training rows (default: the algorithm's, at most 80%%)")
    parser.add_argument("--graph", choices=("random", "ring", "complete", "star"),
                        help="communication graph of graph-topology algorithms (default random)")
    parser.add_argument("--edges", type=int, help="edges of the random graph")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="algorithm option (repeatable; see the algorithm's docs)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--out", help="write the full JSON result to this file (atomically)")
    parser.add_argument("--force", action="store_true", help="let --out replace an existing file")
    parser.add_argument("--diagnostics", action="store_true",
                        help="also write and print the diagnostics: numbers computed on the private training data "
                             "without noise, NOT covered by epsilon")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--continuous-noise", action="store_true",
                        help="draw the noise with numpy's continuous samplers (float_safe=False), which are not "
                             "private as executed: the run says so in its notes (default: float-safe noise)")
    parser.set_defaults(func=run)


def parse_options(items: list[str]) -> dict[str, Any]:
    """``["eta=0.1", "solver=newton"]`` → ``{"eta": 0.1, "solver": "newton"}`` (JSON values where they parse).

    >>> parse_options(["lam=1e-3", "record_every=5", "loss=logistic"])
    {'lam': 0.001, 'record_every': 5, 'loss': 'logistic'}
    """
    options: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--option must be KEY=VALUE, got --option {item!r}")
        if key in options:
            raise ValueError(f"--option {key} is given twice")
        try:
            options[key] = json.loads(text)
        except json.JSONDecodeError:
            options[key] = text
    return options


OPTION_OF = {"n_train": "--n-train", "epsilon": "--epsilon", "delta": "--delta", "agents": "--agents",
             "iterations": "--iterations", "seed": "--seed", "graph": "--graph", "edges": "--edges",
             "variant": "--variant", "clip_quantile": "--clip-quantile"}
"""The option of each :func:`dpkit.algorithms.train` argument, for error messages."""


def check_out(path: str | None, force: bool) -> None:
    """Refuse an ``--out`` that exists (without ``force``) or cannot be written, before any training."""
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ValueError(f"--out {path} is a directory")
    if os.path.exists(path) and not force:
        raise ValueError(f"--out {path} exists; pass --force to replace it (nothing was written)")
    if not os.path.isdir(folder):
        raise ValueError(f"--out {path}: folder {folder} does not exist")
    probe = temp_name(os.path.abspath(path))
    try:  # the only sure test of writability is to write: a temporary file, removed at once
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as error:  # a run-time failure (exit 1), as when the final write fails
        raise type(error)(error.errno, f"cannot write in folder {folder} ({error.strerror or error})",
                          path) from None
    os.unlink(probe)


def run(args: argparse.Namespace) -> int:
    check_numbers(args)
    check_out(args.out, args.force)
    options = parse_options(args.option)
    label = args.label
    if label is not None and label.strip().lstrip("-").isdigit():
        label = int(label)
    bounds = None if args.bounds is None else parse_bounds(args.bounds)
    scaling = _scaling(args, bounds is not None)
    with continuous_noise() if args.continuous_noise else contextlib.nullcontext():
        return _run(args, options, label, bounds, scaling)


def _run(args: argparse.Namespace, options: dict[str, Any], label: Any, bounds: Any, scaling: str) -> int:
    try:
        with options_named({"format": "--format", "label": "--label", "label_column": "--label", "bounds": "--bounds",
                            "public_scaling": "--public-scaling"}):
            data = load_dataset(args.data, variant=args.encoding, rng=args.seed, format=args.format, label=label,
                                bounds=bounds, public_scaling=scaling == "public",
                                private_scaling=scaling == "private" and is_data_file(args.data))
    except FileNotFoundError as error:  # a usage error: exit 2 with one line
        raise ValueError(str(error)) from None
    read_as = _read_as(args.data, args.format, label, scaling)
    bar = None

    def tick(t: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = iter(progress_bar(range(total), total=total, desc=args.algorithm, quiet=args.quiet))
        next(bar, None)

    with single_threaded_blas():
        with options_named(OPTION_OF):
            result = train(args.algorithm, data, epsilon=args.epsilon, delta=args.delta, agents=args.agents,
                           iterations=args.iterations, seed=args.seed, n_train=args.n_train, graph=args.graph,
                           edges=args.edges, variant=args.variant, progress=tick, clip_quantile=args.clip_quantile,
                           **options)
    if bar is not None:
        for _ in bar:
            pass
    if read_as is not None:
        result = dataclasses.replace(result, config={**result.config, "data_read_as": read_as})
    full = result.to_dict(diagnostics=args.diagnostics)
    if args.json:
        print(strict_json.dumps({k: v for k, v in full.items() if k not in SUMMARY_OMITS}))
    else:
        print(summary(result, diagnostics=args.diagnostics))
    if args.out:
        _write_out(args.out, strict_json.dumps(full, indent=1), args.force)
    return 0


def _write_out(path: str, text: str, force: bool) -> None:
    """Write ``--out`` after the result was printed: an ``OSError`` (a full disk, a permission or
    read-only file system, a concurrent writer) names the path and says the result was printed
    (exit 1, as every run-time failure)."""
    try:
        write_new(path, text, force=force)
    except OSError as error:
        raise type(error)(error.errno, f"{error.strerror or error}; the result was printed above, not saved to --out",
                          path) from None


def parse_bounds(text: str) -> list[float | tuple[float, float]]:
    """``"90,17:90,1"`` → ``[90.0, (17.0, 90.0), 1.0]``: a number B is the range [−B, B], ``LOW:HIGH``
    a range (ValueError naming --bounds otherwise)."""
    out: list[float | tuple[float, float]] = []
    for item in text.split(","):
        try:
            if ":" in item:
                low, high = item.split(":")
                out.append((float(low), float(high)))
            else:
                out.append(float(item))
        except ValueError:
            raise ValueError(f"--bounds must be comma-separated numbers B or ranges LOW:HIGH, got --bounds {text!r}"
                             ) from None
    return out


def _scaling(args: argparse.Namespace, bounds: bool) -> str:
    """``"bounds"``, ``"public"``, ``"none"`` or ``"private"`` (the default): the file's column scaling."""
    chosen = [name for name, given in (("--bounds", bounds), ("--public-scaling", args.public_scaling),
                                       ("--no-scaling", args.no_scaling)) if given]
    if len(chosen) > 1:
        raise ValueError(f"give at most one of --bounds, --public-scaling and --no-scaling, got {' and '.join(chosen)}")
    if chosen and names_data_not_file(args.data):
        raise ValueError(f"{chosen[0]} applies to data files only, got --data {args.data}")
    return {"--bounds": "bounds", "--public-scaling": "public", "--no-scaling": "none"}.get(
        chosen[0] if chosen else "", "private")


_SCALING_READ_AS = {
    "bounds": "public bounds (--bounds)",
    "public": "column ranges declared public (--public-scaling)",
    "none": "none (--no-scaling): columns used as given, rows scaled to norm <= 1",
    "private": "column ranges estimated from the training rows with noise, charged to epsilon (the default; "
               "a non-private algorithm takes the training rows' ranges)",
}


def _read_as(data: str, format: str | None, label: int | str | None, scaling: str) -> str | None:
    """How a data file was read (format and how it was chosen, label column, scaling); None for a named dataset."""
    if not is_data_file(data):
        return None
    kind, how = file_format(data, format)
    scaling = _SCALING_READ_AS[scaling]
    if kind == "libsvm":
        return f"LIBSVM ({'--format' if how == 'given' else how}; label: the first field of each line; scaling: {scaling})"
    column = "the last column" if label is None else f"column {label!r}"
    return f"CSV ({'--format' if how == 'given' else how}; label: {column}; scaling: {scaling})"


def summary(result: TrainingResult, diagnostics: bool = False) -> str:
    """The text output: accuracy beside the majority class, certified ε beside the paper's claim;
    with ``diagnostics`` also the last diagnostic values, under their label."""
    config = result.config
    accuracy = "n/a" if result.accuracy is None else f"{result.accuracy:.4f}"
    majority = config.get("majority_accuracy")
    lines = [
        f"algorithm          {result.algorithm} ({result.variant})",
        f"data               {config.get('data')}: {config.get('n_train')} training rows, {config.get('n_test')} test "
        f"rows, d = {config.get('dimension')}",
        *([f"read as            {config['data_read_as']}"] if config.get("data_read_as") else []),
        f"test accuracy      {accuracy}   (majority class {'n/a' if majority is None else f'{majority:.4f}'})",
    ]
    if result.guarantee is None:
        lines.append("epsilon            n/a (non-private: no guarantee)")
    else:
        g = result.guarantee
        lines.append(f"epsilon            {g.epsilon:.4f} at delta {g.delta:g} for one record ({g.neighbouring.value}), "
                     f"certified by the {g.accountant} accountant over the ledger")
    claim = result.paper_claim
    if claim is not None:
        value = "none stated" if claim.epsilon is None else f"{claim.epsilon:.4f} at delta {claim.delta:g}"
        lines.append(f"paper's claim      {value} ({claim.rule}; {'valid' if claim.valid else 'NOT a valid bound'})")
    elif result.guarantee is not None:
        spec = ALGORITHMS.get(result.algorithm)
        lines.append("paper's claim      " + ("none for this variant (--variant paper runs the paper's)"
                                              if spec is not None and "paper" in spec.variants
                                              else "none (no paper variant)"))
    fallback = config.get("fallback")
    if fallback:
        lines.append(f"model              {fallback['chosen']} (the most noisy correct training answers of: trained "
                     f"model, constant +1, constant -1)")
    lines.append(f"iterations         {config.get('iterations')}")
    if "gate_skip_share" in config:
        above = sum(config["broadcasts"]) - sum(config["forced_broadcasts"])
        queries = sum(config["gate_queries"])
        low, high = config["gate_skip_probability"]
        expected = sorted(config["gate_expected_skip_share"])
        lines.append(f"gate               skipped {queries - above} of {queries} chances ({config['gate_skip_share']:.0%}; "
                     f"runs of this gate skip {expected[0]:.0%}-{expected[1]:.0%} on average at constant scores "
                     f"+-{config['clip']:g}, a query alone {low:.2f}-{high:.2f} at any score); "
                     f"{sum(config['broadcasts'])} broadcasts ({sum(config['forced_broadcasts'])} by the deadline), "
                     f"{config['broadcasts_saved']} of {config['agents'] * config['iterations']} saved")
    if result.guarantee is not None:
        unsafe = result.ledger.not_as_executed
        lines.append("as executed        " + ("NOT private as executed: " + "; ".join(unsafe) if unsafe else
                                             "private as executed (every release drew float-safe noise)"))
    lines.append(f"seconds            {result.seconds:.2f}")
    lines.extend(f"warning            {note[len('warning: '):]}" for note in result.notes if note.startswith("warning: "))
    if diagnostics:
        lines.append(f"diagnostics        ({DIAGNOSTIC_LABEL})")
        for key, value in diagnostic_lines(result.diagnostics):
            lines.append(f"  {key:<17}{value}")
    return "\n".join(lines)


def diagnostic_lines(diagnostics: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, last value) of each diagnostic: a scalar, or a per-round series' final entry."""
    out = []
    for key, value in diagnostics.items():
        if key == "history":
            for name, series in value.items():
                if name != "iteration" and series:
                    out.append((f"{name} (last)", f"{series[-1]:.6g}"))
        elif isinstance(value, (int, float)):
            out.append((key, f"{value:.6g}"))
    return out
