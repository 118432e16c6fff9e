"""Datasets for the learning algorithms: UCI Adult, a built-in real dataset, synthetic data, LIBSVM/CSV files.

Every loader returns a :class:`Dataset`: a float feature matrix ``X`` (rows = records) and labels
``y`` in {-1, +1}, already preprocessed the way the papers do (Ding et al. 2020 §5; Huang et al. 2019 §VI-A):

1. drop rows with a missing value (``'?'`` in the Adult files);
2. one-hot encode the categorical attributes;
3. scale each column so that its maximum absolute value is 1;
4. scale each row so that ``||x||_2 <= 1`` (``x / max(1, ||x||)``);
5. map the labels to {-1, +1}.

Where scaling constants come from (they must not be private, or the ε would not cover them):

* the packaged Adult: column maxima of the published files (step 3), treated as public (a
  documented public-data assumption: the data are public, and the runs on them reproduce the
  papers, which scale this way);
* the built-in Fair data and the published tables of
  :mod:`~dpkit.algorithms.substrate.public_tables`: each column's range in the published table
  mapped onto [−1, 1] instead of step 3 (:func:`data_ranges`: columns that start at 0 are
  divided by their maximum, the others centred), the same public-data assumption;
* a user's CSV/LIBSVM file: public per-column bounds the user gives (``bounds``: a number B is
  the range [−B, B], a pair ``(low, high)`` a range; each mapped onto [−1, 1] and clipped), or,
  with ``public_scaling=True``, the file's column ranges as for Fair, which the user thereby
  declares public; or, with ``private_scaling=True``, ranges estimated from the training rows
  with Gaussian noise charged to the run's ε (:mod:`~dpkit.algorithms.substrate.private_ranges`;
  the scaling then happens in :func:`dpkit.algorithms.train`, after the split); by default no
  column scaling at all, only step 4, which is per record and data-independent. Test rows never
  set a constant that is not public. A file also gets a
  constant ``bias`` column (``intercept=True``, the default), so every model can fall back to
  the class prior.

UCI Adult (Becker & Kohavi 1996, CC BY 4.0) ships with dpkit: ``load_adult()`` and
``load_dataset("adult")`` read the gzip'd copy in ``dpkit/algorithms/substrate/datasets/`` (the original
``adult.data`` and ``adult.test``, byte for byte; see the README there); ``load_adult(directory)``
reads the two files from a directory instead. Nothing is downloaded.

Adult variants (``load_adult(variant=...)``), all reconstructions because no paper ships its
encoder:

``"104"`` (Huang et al. 2019; also used for Ding et al. 2020)
    6 continuous columns + 98 one-hot columns over the categories present after the drop
    (workclass 7, education 16, marital-status 7, occupation 14, relationship 6, race 5, sex 2,
    native-country 41) = 104 columns, 45,222 rows.
``"105"`` (Wang et al. 2020)
    ``"104"`` plus a constant bias column (d = 105). The paper does not say where its 105th
    column comes from; the bias column is our reading.
``"124"`` (Cheng et al. 2020, LIBSVM ``a9a`` layout)
    Platt's a9a encoding: the six continuous attributes quantised into quantile bins (age 5,
    fnlwgt 5, education-num 5, capital-gain 2, capital-loss 2, hours-per-week 5) plus one-hot
    categoricals (99 columns) = 123 binary columns, plus a bias column = 124. Bin edges are
    quantiles of the loaded rows, so values differ slightly from the a9a file.

Ding et al. 2020 report 41 features for Adult; that encoding cannot be reconstructed from the
paper, so its reproduction uses ``"104"``.

Errors: a missing file raises ``FileNotFoundError`` naming the path; a malformed line raises
``ValueError`` naming the file and line number. So does a file that is not a CSV/LIBSVM text:
one that is not UTF-8, holds a NUL byte, has a line longer than :data:`MAX_LINE_BYTES`
(16 MiB; a CSV field is at most a line), or whose feature matrix would take more than
:data:`MAX_DENSE_BYTES` (1 GiB at 8 bytes a value; the files are read densely, and a LIBSVM index
is checked against this cap, with the rows read so far, before anything is allocated).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import functools
import gzip
import io
import itertools
import math
import os
import sys
from array import array
from importlib import resources
from typing import Any, Callable, ContextManager, Iterable, Iterator, Sequence

import numpy as np

from dpkit._validation import check_integer, check_positive, check_rng

__all__ = [
    "Dataset",
    "INTERCEPT",
    "ADULT_COLUMNS",
    "ADULT_VARIANTS",
    "ADULT_PACKAGED",
    "load_adult",
    "load_builtin",
    "make_synthetic",
    "make_no_signal",
    "load_libsvm",
    "load_csv",
    "load_dataset",
    "DATA_FORMATS",
    "NAMED_DATA",
    "is_data_file",
    "names_data_not_file",
    "file_format",
    "train_test_split",
    "normalise",
    "preprocess_features",
]

ADULT_COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
    "income",
)
_ADULT_CONTINUOUS = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
_A9A_BINS = {"age": 5, "fnlwgt": 5, "education-num": 5, "capital-gain": 2, "capital-loss": 2, "hours-per-week": 5}
ADULT_VARIANTS = ("104", "105", "124")
NAMED_DATA = ("adult", "builtin", "synthetic")
"""Names :func:`load_dataset` reads as packaged or generated data, never as file paths."""
INTERCEPT = "bias"
"""Name of the constant column the loaders append, so that every model can fall back to the class prior."""
MAX_LINE_BYTES = 1 << 24
"""Longest line (so also the longest CSV field) :func:`load_csv` and :func:`load_libsvm` read: 16 MiB."""
MAX_DENSE_BYTES = 1 << 30
"""Largest feature matrix a CSV/LIBSVM file may expand to, at 8 bytes a value: 1 GiB (the files are read densely)."""


@dataclasses.dataclass(frozen=True)
class Dataset:
    """A preprocessed binary-classification dataset.

    Attributes
    ----------
    X
        ``(n, d)`` float array, every row with ``||x||_2 <= 1`` (up to one ulp).
    y
        ``(n,)`` float array with values in {-1.0, +1.0}.
    name
        Where the data came from.
    feature_names
        One name per column.
    private_scaling
        ``X`` holds a file's columns as read (and its ``bias`` column): a training call
        (:func:`dpkit.algorithms.train`) scales them by ranges estimated from its training rows
        with noise charged to the run (:mod:`~dpkit.algorithms.substrate.private_ranges`), then
        the rows to norm ≤ 1. Rows need not have norm ≤ 1 until then.
    """

    X: np.ndarray
    y: np.ndarray
    name: str = "dataset"
    feature_names: tuple[str, ...] = ()
    private_scaling: bool = False

    def __post_init__(self) -> None:
        X = np.array(self.X, dtype=float)
        y = np.array(self.y, dtype=float)
        X.flags.writeable = False
        y.flags.writeable = False
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D array, got X.shape={X.shape}")
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},), got y.shape={y.shape}")
        if not np.all(np.isfinite(X)):
            raise ValueError("X must contain only finite values")
        if not np.all((y == 1.0) | (y == -1.0)):
            raise ValueError("y must contain only -1 and +1")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        names = tuple(self.feature_names) or tuple(f"x{j}" for j in range(X.shape[1]))
        if len(names) != X.shape[1]:
            raise ValueError(f"feature_names must have {X.shape[1]} entries, got {len(names)}")
        object.__setattr__(self, "feature_names", names)

    @property
    def n(self) -> int:
        """Number of records."""
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        """Number of features."""
        return int(self.X.shape[1])

    def subset(self, index: np.ndarray, name: str | None = None) -> "Dataset":
        """The rows ``index`` (an integer array) as a new Dataset."""
        index = np.asarray(index, dtype=int)
        return Dataset(self.X[index], self.y[index], name or self.name, self.feature_names, self.private_scaling)


def normalise(X: np.ndarray, *, column_max: bool = True, row_norm: bool = True,
              bounds: Sequence[float | tuple[float, float]] | None = None, ranges: bool = False) -> np.ndarray:
    """Scale the columns (as chosen below), then the rows to ``||x||_2 <= 1``.

    Columns, in order of precedence:

    * ``bounds``: public per-column bounds, each a number ``B > 0`` (the range [−B, B]) or a pair
      ``(low, high)`` with ``low < high``; each column is mapped by :func:`scale_to_ranges`;
    * ``ranges=True``: the columns' own ranges (:func:`data_ranges`, which the caller declares
      public) mapped by :func:`scale_to_ranges`;
    * ``column_max=True``: divided by their maximum absolute value (zero columns untouched), the
      papers' preprocessing of Adult;
    * otherwise left as they are.
    """
    X = np.array(X, dtype=float, copy=True)
    if bounds is not None:
        low, high = _bound_ranges(bounds, X.shape[1])
        X = scale_to_ranges(X, low, high)
    elif ranges:
        X = scale_to_ranges(X, *data_ranges(X))
    elif column_max:
        scale = np.max(np.abs(X), axis=0) if X.shape[0] else np.ones(X.shape[1])
        scale[scale == 0] = 1.0
        X /= scale
    if row_norm:
        norms = np.linalg.norm(X, axis=1)
        # rows at or above norm 1 are divided by a hair more than their norm, so that rounding
        # never leaves a row with ||x|| (or sum x^2) above 1
        X /= np.where(norms >= 1.0, norms * (1.0 + 4e-16), 1.0)[:, None]
    return X


def scale_to_ranges(X: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Map column j's public range [low_j, high_j] (low_j < high_j) onto [−1, 1], clipping values outside.

    A symmetric range [−B, B] is a division by B. Centring matters for private learning: on
    Fair's survey scales (ratings 1–5, ages 17–42) dividing by the maximum leaves each column
    near a constant, and the row scaling to norm 1 then spends the norm, and so the model's
    signal, on that constant (``benchmarks/training.py --tables``).

    >>> scale_to_ranges(np.array([[17.0, 0.0], [90.0, 3.0], [53.5, 9.0]]), np.array([17.0, -6.0]),
    ...                 np.array([90.0, 6.0])).tolist()
    [[-1.0, 0.0], [1.0, 0.5], [0.0, 1.0]]
    """
    X = np.asarray(X, dtype=float)
    low = np.asarray(low, dtype=float)
    high = np.asarray(high, dtype=float)
    with np.errstate(over="ignore"):  # a value so far outside its range that the map overflows is clipped
        return np.clip(2.0 * (X - low) / (high - low) - 1.0, -1.0, 1.0)


def data_ranges(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column (low, high) for :func:`scale_to_ranges` taken from ``X`` itself (declared public).

    Each column's minimum and maximum, except where that would move a zero: a column whose
    minimum is 0 gets [−max, max], i.e. it is divided by its maximum, so indicators stay 0/1,
    counts keep their zero and sparse rows stay sparse (centring a one-hot block would give every
    row a norm that grows with the block's size). A constant column c gets [−|c|, |c|] (a
    constant 1, such as a bias, stays 1; a zero column stays 0).
    """
    X = np.asarray(X, dtype=float)
    if not X.shape[0]:
        return -np.ones(X.shape[1]), np.ones(X.shape[1])
    low, high = X.min(axis=0), X.max(axis=0)
    symmetric = (low == 0.0) | (high <= low)
    magnitude = np.maximum(np.abs(low), np.abs(high))
    magnitude[magnitude == 0.0] = 1.0
    return np.where(symmetric, -magnitude, low), np.where(symmetric, magnitude, high)


def _bound_ranges(bounds: Sequence[float | tuple[float, float]], width: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-column (low, high) of ``bounds`` (module docstring), checked."""
    if len(bounds) != width:
        raise ValueError(f"bounds must give one bound per feature column ({width}), got {len(bounds)}")
    low, high = np.empty(width), np.empty(width)
    for j, bound in enumerate(bounds):
        pair = tuple(bound) if isinstance(bound, (tuple, list)) else (-float(bound), float(bound))
        if len(pair) != 2 or not _usable_range(float(pair[0]), float(pair[1])):
            raise ValueError(f"bounds must be finite numbers > 0 or pairs low < high, with a width (2B or high - low) "
                             f"in [{_NORMAL_MIN:.4g}, {_FLOAT_MAX:.4g}] (a normal float), got bound {bound!r} for "
                             f"column {j}")
        low[j], high[j] = float(pair[0]), float(pair[1])
    return low, high


_NORMAL_MIN, _FLOAT_MAX = sys.float_info.min, sys.float_info.max


def _usable_range(low: float, high: float) -> bool:
    """Whether [low, high] can be mapped onto [−1, 1] in floating point: finite ends, low < high, and a
    width neither subnormal (dividing by it overflows) nor overflowing."""
    width = high - low
    return math.isfinite(low) and math.isfinite(high) and _NORMAL_MIN <= width <= _FLOAT_MAX


def _require_file(path: str) -> None:
    if not os.path.isfile(path):
        raise FileNotFoundError(f"data file not found: {path!r}")


ADULT_PACKAGED = "dpkit/algorithms/substrate/datasets"
"""Where the packaged copy of UCI Adult lives (``adult.data.gz``, ``adult.test.gz``, ``README.md``)."""


def _adult_source(directory: str | None, name: str) -> tuple[str, Callable[[], ContextManager[Iterable[str]]]]:
    """(label for messages, opener of the text) of one Adult file, packaged or in ``directory``."""
    if directory is None:
        resource = resources.files("dpkit.algorithms.substrate").joinpath("datasets", name + ".gz")
        if not resource.is_file():
            raise FileNotFoundError(f"packaged Adult file not found: {ADULT_PACKAGED}/{name}.gz (a broken install?)")
        return (f"{ADULT_PACKAGED}/{name}.gz",
                lambda: io.TextIOWrapper(gzip.GzipFile(fileobj=resource.open("rb")), encoding="utf-8",
                                         errors="replace", newline=""))
    path = os.path.join(directory, name)
    _require_file(path)
    # a user's file is read a line at a time with the text checks of _text_lines (NUL bytes, UTF-8, MAX_LINE_BYTES)
    return path, lambda: contextlib.nullcontext(_text_lines(path, "Adult"))


def _read_adult_lines(label: str, handle: Iterable[str]) -> tuple[tuple[str, ...], ...]:
    rows: list[list[str]] = []
    for lineno, line in enumerate(handle, start=1):
        line = line.strip()
        if not line or line.startswith("|"):
            continue  # blank lines and the '|1x3 Cross validator' header of the original adult.test
        fields = [field.strip() for field in line.split(",")]
        if len(fields) != len(ADULT_COLUMNS):
            raise ValueError(
                f"malformed Adult line in {label!r} at line {lineno}: expected {len(ADULT_COLUMNS)} "
                f"comma-separated fields, got {len(fields)}"
            )
        for name in _ADULT_CONTINUOUS:
            value = fields[ADULT_COLUMNS.index(name)]
            if value != "?":
                try:
                    float(value)
                except ValueError:
                    raise ValueError(
                        f"malformed Adult line in {label!r} at line {lineno}: column {name!r} "
                        f"is not a number: {value!r}"
                    ) from None
        label_value = fields[-1].rstrip(".")
        if label_value not in (">50K", "<=50K"):
            raise ValueError(
                f"malformed Adult line in {label!r} at line {lineno}: income must be '>50K' or '<=50K', "
                f"got {fields[-1]!r}"
            )
        fields[-1] = label_value
        rows.append(fields)
    if not rows:
        raise ValueError(f"no records in {label!r}")
    return tuple(tuple(row) for row in rows)


def load_adult(
    directory: str | os.PathLike | None = None,
    variant: str = "104",
    *,
    files: Sequence[str] = ("adult.data", "adult.test"),
    drop_missing: bool | None = None,
) -> Dataset:
    """Load and preprocess UCI Adult (Becker & Kohavi 1996): the packaged copy, or ``directory``.

    Parameters
    ----------
    directory
        None (default): the copy that ships with dpkit. Otherwise a folder holding the UCI files
        ``adult.data`` and ``adult.test``.
    variant
        ``"104"`` (Huang et al. 2019, Ding et al. 2020), ``"105"`` (Wang et al. 2020: + bias) or
        ``"124"`` (Cheng et al. 2020: a9a-style bins + bias); see the module docstring.
    files
        Which of the files to pool (both by default: the papers resample train/test from the pool).
    drop_missing
        Drop rows with a ``'?'``. Default: True for ``"104"``/``"105"``, False for ``"124"`` (a9a
        keeps them, encoding a missing category as all zeros; this is what makes workclass
        contribute 8 columns and the total 124).

    Returns
    -------
    Dataset
        45,222 rows when both files are pooled and missing rows are dropped.

    Raises
    ------
    FileNotFoundError
        If ``directory`` or a file is missing (the message names the path).
    ValueError
        For an unknown variant or a malformed line (file and line number in the message).

    Examples
    --------
    >>> data = load_adult()
    >>> data.n, data.d, int((data.y > 0).sum())
    (45222, 104, 11208)
    """
    if variant not in ADULT_VARIANTS:
        raise ValueError(f"variant must be one of {ADULT_VARIANTS}, got variant={variant!r}")
    if directory is not None:
        directory = os.fspath(directory)
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"Adult data directory not found: {directory!r}")
    if drop_missing is None:
        drop_missing = variant != "124"
    files = tuple(files)
    for name in files:
        _adult_source(directory, name)  # a missing file raises here, naming it
    mtimes = tuple(0 if directory is None else os.stat(os.path.join(directory, name)).st_mtime_ns for name in files)
    return _load_adult_cached(directory, files, mtimes, variant, bool(drop_missing))


@functools.lru_cache(maxsize=8)
def _load_adult_cached(directory: str | None, files: tuple[str, ...], mtimes: tuple[int, ...], variant: str,
                       drop_missing: bool) -> Dataset:
    rows: list[tuple[str, ...]] = []
    for name in files:
        label, opener = _adult_source(directory, name)
        with opener() as handle:
            rows.extend(_read_adult_lines(label, handle))
    if drop_missing:
        rows = [row for row in rows if "?" not in row]
    else:
        rows = [row for row in rows if all(row[ADULT_COLUMNS.index(c)] != "?" for c in _ADULT_CONTINUOUS)]
    if not rows:
        raise ValueError(f"no complete records in {directory or ADULT_PACKAGED!r}")
    columns = list(zip(*rows))
    y = np.array([1.0 if value == ">50K" else -1.0 for value in columns[-1]])
    blocks: list[np.ndarray] = []
    names: list[str] = []
    for j, name in enumerate(ADULT_COLUMNS[:-1]):
        values = columns[j]
        if name in _ADULT_CONTINUOUS:
            numeric = np.array([float(v) if v != "?" else np.nan for v in values])
            if variant == "124":
                block, labels = _quantile_bins(numeric, _A9A_BINS[name])
                blocks.append(block)
                names.extend(f"{name}<={label}" for label in labels)
            else:
                blocks.append(np.nan_to_num(numeric, nan=0.0)[:, None])
                names.append(name)
        else:
            categories = sorted(set(values) - {"?"})
            index = {c: k for k, c in enumerate(categories)}
            block = np.zeros((len(values), len(categories)))
            for r, v in enumerate(values):
                if v in index:
                    block[r, index[v]] = 1.0
            blocks.append(block)
            names.extend(f"{name}={c}" for c in categories)
    X = np.hstack(blocks)
    if variant in ("105", "124"):
        X = np.hstack([X, np.ones((X.shape[0], 1))])
        names.append(INTERCEPT)
    return Dataset(normalise(X), y, f"adult[{variant}]", tuple(names))


def _quantile_bins(values: np.ndarray, bins: int) -> tuple[np.ndarray, list[str]]:
    """One-hot quantile bins (a9a style); ties collapse to zero/non-zero for the 2-bin columns."""
    finite = values[np.isfinite(values)]
    if bins == 2:
        edges = np.array([0.0])
    else:
        edges = np.unique(np.quantile(finite, np.linspace(0, 1, bins + 1)[1:-1]))
        while len(edges) < bins - 1:  # keep the column count fixed when quantiles tie
            edges = np.append(edges, edges[-1] + 1.0)
    codes = np.searchsorted(edges, values, side="left")
    block = np.zeros((len(values), len(edges) + 1))
    ok = np.isfinite(values)
    block[np.flatnonzero(ok), codes[ok]] = 1.0
    labels = [f"{e:g}" for e in edges] + ["inf"]
    return block, labels


def load_builtin(name: str = "fair") -> Dataset:
    """A small real dataset that ships with statsmodels (a run-time dependency of dpkit).

    ``"fair"``: Fair's 1978 affairs survey (statsmodels ``datasets.fair``), 6,366 rows, 8 features
    (rate_marriage, age, yrs_married, children, religious, educ, occupation, occupation_husb) plus
    a bias column; label +1 when ``affairs > 0`` (2,053 rows, 32 %). Each column's published range
    is mapped onto [−1, 1] (:func:`data_ranges`, :func:`scale_to_ranges`), then rows to norm ≤ 1.
    """
    if name != "fair":
        raise ValueError(f"name must be 'fair', got name={name!r}")
    from statsmodels.datasets import fair

    frame = fair.load_pandas().data
    features = [c for c in frame.columns if c != "affairs"]
    X, names = preprocess_features(frame[features].to_numpy(dtype=float), tuple(features), public_scaling=True)
    y = np.where(frame["affairs"].to_numpy() > 0, 1.0, -1.0)
    return Dataset(X, y, "fair (statsmodels)", names)


def make_synthetic(
    n: int = 1000,
    d: int = 10,
    *,
    rng: np.random.Generator | int | None = 0,
    noise: float = 0.1,
    separation: float = 4.0,
) -> Dataset:
    """A synthetic logistic-model dataset: ``x`` uniform in the unit ball's directions times U(0,1)^(1/d),
    ``y = +1`` with probability ``sigmoid(separation * w·x)``, ``w`` a random unit vector.
    ``noise`` is the probability of flipping each label afterwards.
    """
    n = check_integer("n", n, minimum=1)
    d = check_integer("d", d, minimum=1)
    if not 0.0 <= float(noise) <= 0.5:
        raise ValueError(f"noise must be in [0, 0.5], got noise={noise}")
    separation = check_positive("separation", separation)
    gen = check_rng(rng)
    w = gen.standard_normal(d)
    w /= np.linalg.norm(w)
    direction = gen.standard_normal((n, d))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    X = direction * gen.uniform(0, 1, (n, 1)) ** (1.0 / d)
    prob = 1.0 / (1.0 + np.exp(-separation * X @ w))
    y = np.where(gen.uniform(size=n) < prob, 1.0, -1.0)
    flip = gen.uniform(size=n) < noise
    y[flip] = -y[flip]
    return Dataset(normalise(X, column_max=False), y, f"synthetic(n={n}, d={d})")


def make_no_signal(n: int, d: int, *, rng: np.random.Generator | int | None = 0) -> Dataset:
    """A dataset with no signal: rows x ~ N(0, I_d) pulled into the unit ball (x / max(1, ‖x‖)),
    labels ±1 by a fair coin, independent of x (the databases of audit instances).

    >>> data = make_no_signal(500, 2, rng=0)
    >>> data.X.shape, bool((np.linalg.norm(data.X, axis=1) <= 1.0 + 1e-12).all()), set(data.y.tolist())
    ((500, 2), True, {1.0, -1.0})
    """
    n = check_integer("n", n, minimum=1)
    d = check_integer("d", d, minimum=1)
    gen = check_rng(rng)
    X = gen.standard_normal((n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.where(gen.random(n) < 0.5, 1.0, -1.0)
    return Dataset(X, y, f"no_signal(n={n}, d={d})")


def _label(value: str, path: str, lineno: int, column: str = "") -> float:
    where = f"in {path!r} at line {lineno}" + (f", {column}" if column else "")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"malformed label {where}: {_shown(value)}") from None
    if number in (1.0,):
        return 1.0
    if number in (-1.0, 0.0):
        return -1.0
    raise ValueError(f"label must be -1/0/+1 {where}, got {_shown(value)}")


def _text_lines(path: str, kind: str) -> Iterator[str]:
    """The lines of a UTF-8 text file, read one at a time; ValueError naming the file and line if it
    is not text (not UTF-8, a NUL byte) or a line is longer than :data:`MAX_LINE_BYTES`."""
    with open(path, "rb") as handle:
        lineno = 0
        while raw := handle.readline(MAX_LINE_BYTES + 1):
            lineno += 1
            if b"\0" in raw:
                raise ValueError(f"{path!r} is not a text {kind} file: line {lineno} holds a NUL byte")
            if len(raw.rstrip(b"\r\n")) > MAX_LINE_BYTES:
                raise ValueError(f"line {lineno} of {path!r} is longer than {MAX_LINE_BYTES} bytes, the longest "
                                 f"{kind} line dpkit reads (MAX_LINE_BYTES)")
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"{path!r} is not a text {kind} file: line {lineno} is not UTF-8 text") from None
            yield line


def _check_dense(path: str, rows: int, columns: int, lineno: int) -> None:
    """Refuse a file whose ``rows`` × ``columns`` feature matrix (read up to ``lineno``) would pass
    :data:`MAX_DENSE_BYTES`, before it is allocated."""
    needed = 8 * rows * columns
    if needed > MAX_DENSE_BYTES:
        raise ValueError(f"{path!r} is too large to read: at line {lineno}, {rows} rows x {columns} columns would "
                         f"take {needed / 2**30:.3g} GiB as a dense matrix, above the {MAX_DENSE_BYTES / 2**30:g} GiB "
                         f"cap (MAX_DENSE_BYTES)")


def _shown(cell: str) -> str:
    """A cell for an error message: its repr, cut to 40 characters."""
    cell = cell.strip()
    return repr(cell) if len(cell) <= 40 else repr(cell[:40]) + f"... ({len(cell)} characters)"


def load_libsvm(path: str | os.PathLike, n_features: int | None = None, *, preprocess: bool = True,
                bounds: Sequence[float | tuple[float, float]] | None = None, public_scaling: bool = False,
                private_scaling: bool = False, intercept: bool = True) -> Dataset:
    """Load a binary LIBSVM/SVMlight file (``label idx:value ...``, 1-based indices; labels ±1 or 0/1).

    Preprocessing: ``bounds`` (public per-column ranges), or the file's column ranges if
    ``public_scaling`` (declared public), or ranges estimated privately from the training rows at
    training time if ``private_scaling``, else none; a constant ``bias`` column if ``intercept``;
    then every row is scaled to ‖x‖ ≤ 1 (module docstring; with ``private_scaling``, at training).
    """
    path = os.fspath(path)
    _require_file(path)
    if n_features is not None:
        n_features = check_integer("n_features", n_features, minimum=1)
    labels: list[float] = []
    rows, columns, values = array("q"), array("q"), array("d")  # the entries, 24 bytes each
    d = n_features or 0
    for lineno, line in enumerate(_text_lines(path, "LIBSVM"), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        labels.append(_label(parts[0], path, lineno))
        for item in parts[1:]:
            try:
                index, value = item.split(":")
                k, v = int(index), float(value)
            except ValueError:
                raise ValueError(f"malformed LIBSVM entry {_shown(item)} in {path!r} at line {lineno}") from None
            if k < 1 or not math.isfinite(v):
                raise ValueError(f"malformed LIBSVM entry {_shown(item)} in {path!r} at line {lineno}")
            if k > d:  # checked against the rows so far (and the bias column) before it is stored
                _check_dense(path, len(labels), k + 1, lineno)
                if n_features is not None:
                    raise ValueError(f"n_features must be >= {k} (index at line {lineno} of {path!r}), got "
                                     f"n_features={n_features}")
                d = k
            rows.append(len(labels) - 1)
            columns.append(k - 1)
            values.append(v)
        _check_dense(path, len(labels), d + 1, lineno)
        if 24 * len(values) > MAX_DENSE_BYTES:  # repeated indices: the entries themselves stay under the cap
            raise ValueError(f"{path!r} is too large to read: at line {lineno}, its {len(values)} entries pass the "
                             f"{MAX_DENSE_BYTES / 2**30:g} GiB cap (MAX_DENSE_BYTES)")
    if not labels:
        raise ValueError(f"no records in {path!r}")
    X = np.zeros((len(labels), max(d, 1)))
    X[np.asarray(rows, dtype=np.intp), np.asarray(columns, dtype=np.intp)] = np.asarray(values, dtype=float)
    names = tuple(f"x{j}" for j in range(X.shape[1]))
    if preprocess:
        X, names = preprocess_features(X, names, bounds=bounds, public_scaling=public_scaling,
                                       private_scaling=private_scaling, intercept=intercept)
    return Dataset(X, np.array(labels), os.path.basename(path), names, preprocess and private_scaling)


def _with_intercept(X: np.ndarray, names: tuple[str, ...], intercept: bool,
                    row_norm: bool = True) -> tuple[np.ndarray, tuple[str, ...]]:
    """(X with a constant ``bias`` column if ``intercept``, its names), rows then scaled to ‖x‖ ≤ 1
    if ``row_norm``."""
    if intercept:
        X, names = np.hstack([X, np.ones((X.shape[0], 1))]), tuple(names) + (INTERCEPT,)
    return normalise(X, column_max=False, row_norm=row_norm), names


def _scaling_choice(bounds: Sequence[float | tuple[float, float]] | None, public_scaling: bool,
                    private_scaling: bool) -> None:
    """Refuse more than one source of column scaling."""
    if sum((bounds is not None, bool(public_scaling), bool(private_scaling))) > 1:
        raise ValueError("give at most one of bounds, public_scaling and private_scaling")


def preprocess_features(X: np.ndarray, names: tuple[str, ...], *,
                        bounds: Sequence[float | tuple[float, float]] | None = None, public_scaling: bool = False,
                        private_scaling: bool = False, intercept: bool = True) -> tuple[np.ndarray, tuple[str, ...]]:
    """(features, names) of a table after the chosen column scaling (module docstring: at most one of
    ``bounds``, ``public_scaling`` and ``private_scaling``), the ``bias`` column if ``intercept`` and,
    unless the scaling is left to training (``private_scaling``), the row scaling to ‖x‖ ≤ 1.

    >>> X, names = preprocess_features(np.array([[17.0, 0.0], [90.0, 3.0]]), ("age", "visits"), public_scaling=True)
    >>> names, X.round(4).tolist()
    (('age', 'visits', 'bias'), [[-0.7071, 0.0, 0.7071], [0.5774, 0.5774, 0.5774]])
    """
    _scaling_choice(bounds, public_scaling, private_scaling)
    if public_scaling:
        for k, (low, high) in enumerate(zip(*data_ranges(X))):
            if not _usable_range(float(low), float(high)):
                raise ValueError(f"public_scaling: {_column_name(k, names)} spans [{low:.4g}, {high:.4g}], whose width "
                                 f"is outside [{_NORMAL_MIN:.4g}, {_FLOAT_MAX:.4g}] (a normal float), so it cannot be "
                                 "mapped onto [-1, 1]; rescale the column or give its bounds")
    X = normalise(X, column_max=False, ranges=public_scaling, row_norm=False, bounds=bounds)
    return _with_intercept(X, names, intercept, row_norm=not private_scaling)


def _column_name(k: int, names: Sequence[str]) -> str:
    return f"column {k} ({names[k]!r})" if k < len(names) else f"column {k}"


def load_csv(path: str | os.PathLike, *, label_column: int | str = -1, header: bool | None = None,
             preprocess: bool = True, bounds: Sequence[float | tuple[float, float]] | None = None, public_scaling: bool = False,
             private_scaling: bool = False, intercept: bool = True) -> Dataset:
    """Load a numeric CSV file whose ``label_column`` holds ±1 or 0/1 labels.

    Preprocessing: ``bounds`` (public per-feature-column ranges, label column left out), or the
    file's column ranges if ``public_scaling`` (declared public), or ranges estimated privately
    from the training rows at training time if ``private_scaling``, else none; a constant ``bias``
    column if ``intercept``; then every row is scaled to ‖x‖ ≤ 1 (module docstring; with
    ``private_scaling``, at training).

    ``label_column`` is a 0-based column index (negative counts from the end; default the last
    column) or a column name of the header. ``header`` None detects it: a first line with a
    non-numeric field is a header. Errors name the file, the line and the column (its index and,
    with a header, its name).
    """
    path = os.fspath(path)
    _require_file(path)
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, MAX_LINE_BYTES))  # a field may fill a line; restored below
    reader = csv.reader(_text_lines(path, "CSV"))
    try:
        return _read_csv(path, reader, label_column=label_column, header=header, preprocess=preprocess,
                         bounds=bounds, public_scaling=public_scaling, private_scaling=private_scaling,
                         intercept=intercept)
    except csv.Error as error:
        raise ValueError(f"malformed CSV line in {path!r} at line {reader.line_num}: {error}") from None
    finally:
        csv.field_size_limit(limit)


def _read_csv(path: str, reader: Any, *, label_column: int | str, header: bool | None, preprocess: bool,
              bounds: Sequence[float | tuple[float, float]] | None, public_scaling: bool, private_scaling: bool,
              intercept: bool) -> Dataset:
    """:func:`load_csv` on the rows of ``reader``, read one at a time."""
    lines = ((reader.line_num, row) for row in reader if row and any(c.strip() for c in row))
    first = next(lines, None)
    if first is None:
        raise ValueError(f"no records in {path!r}")
    names: tuple[str, ...] = ()
    if header is None:
        try:
            [float(c) for c in first[1]]
            header = False
        except ValueError:
            header = True
    if header:
        names = tuple(c.strip() for c in first[1])
    else:
        lines = itertools.chain([first], lines)
    width = len(names) if names else len(first[1])
    if isinstance(label_column, str):
        if not names:
            raise ValueError(f"label column {label_column!r} is a name, but {path!r} has no header line; "
                             f"give the label column's index")
        if label_column.strip() not in names:
            raise ValueError(f"label column {label_column!r} is not in the header of {path!r}; columns: "
                             f"{', '.join(names)}")
        label_column = names.index(label_column.strip())
    elif not isinstance(label_column, (int, np.integer)) or isinstance(label_column, bool):
        raise TypeError(f"label_column must be a column index or name, got label_column={label_column!r}")
    if not -width <= label_column < width:
        raise ValueError(f"label_column={label_column} is out of range for {path!r}, which has {width} columns")
    label_index = int(label_column) % width
    features = array("d")  # row after row, 8 bytes a value
    labels: list[float] = []
    for lineno, row in lines:
        if len(row) != width:
            raise ValueError(f"malformed CSV line in {path!r} at line {lineno}: expected {width} fields, got {len(row)}")
        _check_dense(path, len(labels) + 1, width, lineno)  # width - 1 features and the bias column
        values = []
        for k, cell in enumerate(row):
            try:
                value = float(cell)
            except ValueError:
                raise ValueError(f"malformed CSV line in {path!r} at line {lineno}, {_column_name(k, names)}: "
                                 f"{_shown(cell)} is not a number") from None
            if not math.isfinite(value):
                raise ValueError(f"malformed CSV line in {path!r} at line {lineno}, {_column_name(k, names)}: "
                                 f"non-finite value {_shown(cell)}")
            values.append(value)
        values.pop(label_index)  # the label cell is read below as text, not as a feature
        labels.append(_label(row[label_index].strip(), path, lineno, "label " + _column_name(label_index, names)))
        features.extend(values)
    if not labels:
        raise ValueError(f"no records in {path!r}")
    if names:
        names = tuple(n for k, n in enumerate(names) if k != label_index)
    X = np.asarray(features, dtype=float).reshape(len(labels), width - 1)
    names = names or tuple(f"x{j}" for j in range(X.shape[1]))
    if preprocess:
        X, names = preprocess_features(X, names, bounds=bounds, public_scaling=public_scaling,
                                       private_scaling=private_scaling, intercept=intercept)
    return Dataset(X, np.array(labels), os.path.basename(path), names, preprocess and private_scaling)


DATA_FORMATS = ("csv", "libsvm")
"""The file formats :func:`load_dataset` reads."""
_EXTENSIONS = {".csv": "csv", ".libsvm": "libsvm", ".svm": "libsvm"}


def file_format(path: str, format: str | None = None) -> tuple[str, str]:
    """(format, how it was chosen) of a data file: ``format`` if given, else from the extension
    ``.csv`` (CSV) or ``.libsvm``/``.svm`` (LIBSVM), saying so; any other extension is refused
    rather than guessed.

    >>> file_format("table.csv"), file_format("table.txt", "csv")
    (('csv', 'from the extension .csv'), ('csv', 'given'))
    """
    if format is not None:
        if format not in DATA_FORMATS:
            raise ValueError(f"format must be one of {DATA_FORMATS}, got format={format!r}")
        return format, "given"
    extension = os.path.splitext(path)[1].lower()
    if extension in _EXTENSIONS:
        return _EXTENSIONS[extension], f"from the extension {extension}"
    raise ValueError(f"cannot tell the format of {path!r} from its extension ({extension or 'none'}): "
                     f"give the format, 'csv' or 'libsvm' (--format)")


def load_dataset(spec: str, *, variant: str = "104", rng: np.random.Generator | int | None = 0,
                 format: str | None = None, label: int | str | None = None, bounds: Sequence[float | tuple[float, float]] | None = None,
                 public_scaling: bool = False, private_scaling: bool = False) -> Dataset:
    """Load by a CLI-style name: ``"adult"`` (the packaged UCI Adult), ``"builtin"`` (statsmodels' Fair
    data), ``"synthetic"``, an Adult directory, or a CSV / LIBSVM file path.

    For a file, ``format`` (``"csv"`` or ``"libsvm"``) chooses the reader; without it the
    extension must say (:func:`file_format`). ``label`` is the CSV label column (index or header
    name; default the last column); LIBSVM files carry the label first on each line. ``bounds``,
    ``public_scaling`` and ``private_scaling`` choose a file's column scaling (module docstring;
    default none).

    ``variant`` is the Adult encoding; ``rng`` seeds the synthetic data.

    >>> load_dataset("adult").name
    'adult[104]'
    """
    if not isinstance(spec, str) or not spec:
        raise TypeError(f"data must be a non-empty string, got data={spec!r}")
    if (format is not None or label is not None or bounds is not None or public_scaling or private_scaling) and \
            names_data_not_file(spec):
        raise ValueError(f"format, label, bounds, public_scaling and private_scaling apply to data files only, "
                         f"got data={spec!r}")
    _scaling_choice(bounds, public_scaling, private_scaling)
    if is_data_file(spec):
        kind, _ = file_format(spec, format)
        if kind == "libsvm":
            if label is not None:
                raise ValueError(f"label applies to CSV files only: a LIBSVM file's label is the first field of "
                                 f"each line, got label={label!r}")
            return load_libsvm(spec, bounds=bounds, public_scaling=public_scaling, private_scaling=private_scaling)
        return load_csv(spec, label_column=-1 if label is None else label, bounds=bounds, public_scaling=public_scaling,
                        private_scaling=private_scaling)
    if spec == "adult":
        return load_adult(None, variant)
    if spec == "builtin":
        return load_builtin()
    if spec == "synthetic":
        return make_synthetic(4000, 20, rng=rng)
    if os.path.isdir(spec):
        return load_adult(spec, variant)
    raise FileNotFoundError(f"data path not found: {spec!r} (expected 'adult', 'builtin', 'synthetic', an Adult "
                            f"directory or a file)")


def is_data_file(spec: str) -> bool:
    """Whether :func:`load_dataset` reads ``spec`` as a CSV/LIBSVM file (an existing file, not a name of
    :data:`NAMED_DATA`)."""
    return os.path.isfile(spec) and spec not in NAMED_DATA


def names_data_not_file(spec: str) -> bool:
    """Whether ``spec`` names packaged or generated data or an Adult directory, which take no file options."""
    return spec in NAMED_DATA or os.path.isdir(spec)


def train_test_split(
    data: Dataset, n_train: int | float, rng: np.random.Generator | int | None = 0
) -> tuple[Dataset, Dataset]:
    """Random split: ``n_train`` rows (an int, or a fraction in (0, 1)) for training, the rest for testing."""
    gen = check_rng(rng)
    if isinstance(n_train, float) and 0.0 < n_train < 1.0:
        n_train = int(round(n_train * data.n))
    n_train = check_integer("n_train", n_train, minimum=1)
    if n_train >= data.n:
        raise ValueError(f"n_train must be < number of rows {data.n}, got n_train={n_train}")
    perm = gen.permutation(data.n)
    return data.subset(perm[:n_train], data.name + ":train"), data.subset(perm[n_train:], data.name + ":test")
