"""Adapters that audit other DP libraries as shipped: diffprivlib, OpenDP, python-dp (``pydp``), Pipeline-DP.

Each :class:`LibraryCase` wraps one call of a library as ``mechanism(database, n, rng)`` for
:func:`dpkit.audit.audit`, with

* the **claim read from the library itself** (OpenDP's privacy map, diffprivlib's ``epsilon``
  and ``delta`` attributes, python-dp's ``epsilon`` argument) and where it came from;
* the **neighbouring relation** the library's claim refers to, and **pairs built from the record
  domain**: datasets of extreme records (all at the lower bound, and one record moved to the
  upper bound), not a fixed shift of the answer;
* the **query answer** of an input (``answer``), for the audit's lattice events relative to the
  input (``None`` where the release is not the answer plus noise);
* the **RNG bridge**: ``"bridged"`` when the audit's ``rng`` drives the library (diffprivlib's
  ``random_state``), otherwise why it cannot be (OpenDP and python-dp draw from their own
  secure generators, Pipeline-DP from its noise module); :func:`seed_reproducible` checks it by
  running twice on one seed.

The libraries are imported lazily, inside the functions; install them with the ``gallery`` extra.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import math
from typing import Any, Callable

import numpy as np

from dpkit.audit.rng_bridge import per_call_mechanism

__all__ = ["LibraryCase", "seed_reproducible", "opendp_cases", "opendp_float_sum_cases", "diffprivlib_cases",
           "pydp_cases", "pipeline_dp_cases", "library_cases"]

_RECORDS = 10  # records per dataset in the built pairs


@dataclasses.dataclass(frozen=True)
class LibraryCase:
    """One library call under audit (see the module docstring)."""

    library: str
    distribution: str
    name: str
    mechanism: Callable[[Any, int, np.random.Generator], np.ndarray]
    pairs: list[tuple[Any, Any]]
    claimed_epsilon: float
    claimed_delta: float
    claim_source: str
    relation: str
    rng: str
    expected: str  # "pass" (the claim holds as executed) or "refute" (a known leak or a false claim)
    reference: str = ""
    small_samples: int = 30_000  # outputs per pair in the gallery's CI budget (slow libraries get fewer)
    pairs_label: str = "all-0 vs one record at 1"
    float_events: bool = True  # False: audit the values only (float_bits=False), so a refutation is not a float leak
    answer: Callable[[Any], Any] | None = None  # the exact query answer of an input (the audit's answer=)

    @property
    def version(self) -> str:
        return importlib.metadata.version(self.distribution)


def seed_reproducible(mechanism: Callable[[Any, int, np.random.Generator], Any], database: Any, n: int = 8,
                      seed: int = 12345) -> bool:
    """Whether two runs on the same seed give the same outputs: ``False`` for a mechanism that
    ignores ``rng`` (then ``result.seed`` does not reproduce an audit of it)."""
    first = np.asarray(mechanism(database, n, np.random.default_rng(seed)), dtype=float)
    second = np.asarray(mechanism(database, n, np.random.default_rng(seed)), dtype=float)
    return bool(np.array_equal(first, second, equal_nan=True))


def _count_pairs() -> list[tuple[Any, Any]]:
    """Extreme records of the domain [0, 1]: all at 0, and one moved to 1 (replace one record);
    the add/remove neighbour (one record of value 1 more) is the same change of a sum."""
    low = np.zeros(_RECORDS)
    return [(low, np.r_[1.0, low[1:]])]


_OWN_RNG = "not bridged: the library draws from its own generator and ignores rng (not seed-reproducible)"


def opendp_cases() -> list[LibraryCase]:
    """OpenDP's Laplace and Gaussian on a sum of records in [0, 1] (l1/l2 distance 1 of the sum:
    one record changed), on float vectors (float samplers) and on integer vectors (discrete
    Laplace and discrete Gaussian), vector form (one call gives ``n`` outputs); claims from
    ``measurement.map(1)``; a Gaussian's ρ-zCDP claim is converted to (ε, 10⁻⁵)-DP by
    ε = ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    delta = 1e-5

    def measurements(kind: type) -> tuple[Any, Any]:
        space = dp.vector_domain(dp.atom_domain(T=kind, nan=False) if kind is float else dp.atom_domain(T=kind))
        return (dp.m.make_laplace(space, dp.l1_distance(T=kind), scale=1.0),
                dp.m.make_gaussian(space, dp.l2_distance(T=kind), scale=2.0))

    def run(measurement: Any, kind: type) -> Callable[[Any, int, np.random.Generator], np.ndarray]:
        def mechanism(db: Any, n: int, rng: np.random.Generator) -> np.ndarray:
            return np.asarray(measurement([kind(np.sum(db))] * n), dtype=float)
        return mechanism

    def zcdp(measurement: Any) -> float:
        rho = float(measurement.map(1))
        return rho + 2 * math.sqrt(rho * math.log(1 / delta))

    relation = "replace one record in [0, 1] of a sum (distance 1)"
    source = "opendp measurement.map(d_in=1)"
    cases = []
    for kind, label in ((float, "float"), (int, "integer")):
        laplace, gaussian = measurements(kind)
        rho = float(gaussian.map(1))
        cases += [
            LibraryCase("opendp", "opendp", f"make_laplace ({label}, scale 1)", run(laplace, kind), _count_pairs(),
                        float(laplace.map(1)), 0.0, source, relation, _OWN_RNG, "pass", answer=np.sum),
            LibraryCase("opendp", "opendp", f"make_gaussian ({label}, scale 2)", run(gaussian, kind), _count_pairs(),
                        zcdp(gaussian), delta, source + f" (rho = {rho:g} zCDP)", relation, _OWN_RNG, "pass",
                        answer=np.sum),
        ]
    laplace, _ = measurements(float)
    cases.insert(1, LibraryCase("opendp", "opendp", "make_laplace, false claim eps/2", run(laplace, float),
                                _count_pairs(), float(laplace.map(1)) / 2, 0.0, source + ", halved", relation,
                                _OWN_RNG, "refute", answer=np.sum))
    return cases


_SUM_RECORDS = 2**16  # records per dataset of the float-sum case
_SUM_LOW = 2.0**40  # ... clipped to [2^40, 2^40 + 1]: U − L = 1, ulp(2^40) = 2^-12, ulp of the sum 16


def opendp_float_sum_cases() -> list[LibraryCase]:
    """OpenDP's float sum of clipped records (``then_sum`` on 2¹⁶ records in [2⁴⁰, 2⁴⁰ + 1], a known
    size, replace one record = symmetric distance 2) followed by Laplace noise at the scale its own
    map gives the sum (ε = 1), on adversarial neighbours in the style of Casacuberta, Shoemate,
    Vadhan & Wagaman (CCS 2022): mixed magnitudes, where the rounding of the float sum, not the
    records' range U − L = 1, sets how far the computed sum moves. The pair is found with the
    library's own sum (a seeded search over one replaced record, stopping at a move of 4·(U − L)
    or more; OpenDP 0.16.0's moves by 16). OpenDP implements that paper's fix (its sum's map adds
    the rounding error, 513 here), so the claim is expected to hold. The sum runs once per call;
    the noise is drawn in vector form (``n`` outputs), claim from ``measurement.map(2)``."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    low, high = _SUM_LOW, _SUM_LOW + 1.0
    space = (dp.vector_domain(dp.atom_domain(bounds=(low, high)), size=_SUM_RECORDS), dp.symmetric_distance())
    total = space >> dp.t.then_sum()
    scale = float(total.map(2))
    claim = float((total >> dp.m.then_laplace(scale=scale)).map(2))
    noise = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float),
                              scale=scale)

    def answer(db: Any) -> float:
        return float(total([float(v) for v in np.asarray(db, dtype=float)]))

    def mechanism(db: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.asarray(noise([answer(db)] * n), dtype=float)

    search = np.random.default_rng(0)
    base = low + search.integers(0, 4097, _SUM_RECORDS) * 2.0**-12  # records on the grid of [L, U]
    first = answer(base)
    best, best_move = base, -1.0
    for index in search.integers(0, _SUM_RECORDS, 20):
        for value in (low, high):
            neighbour = base.copy()
            neighbour[index] = value
            move = abs(answer(neighbour) - first)
            if move > best_move:
                best, best_move = neighbour, move
        if best_move >= 4.0 * (high - low):
            break
    return [LibraryCase("opendp", "opendp", "then_sum >> then_laplace (float, 2^16 records in [2^40, 2^40+1])",
                        mechanism, [(base, best)], claim, 0.0,
                        f"opendp (sum >> laplace).map(d_in=2), laplace scale = sum.map(2) = {scale:.4g}",
                        "replace one record in [2^40, 2^40 + 1] (symmetric distance 2)", _OWN_RNG, "pass",
                        small_samples=10_000,
                        pairs_label=f"Casacuberta et al. 2022: one record replaced, OpenDP's float sum moves by "
                                    f"{best_move:g} (U - L = 1)",
                        answer=answer)]


_DPL_BUG_94 = "https://github.com/IBM/differential-privacy-library/issues/94"
_DPL_BUG_105 = "https://github.com/IBM/differential-privacy-library/issues/105"
_BRIDGED_RS = "bridged: random_state=RandomState(seed drawn from rng)"


def diffprivlib_cases() -> list[LibraryCase]:
    """diffprivlib's mechanisms on a sum of records in [0, 1] (sensitivity 1), its tools on the
    records themselves, and ``LinearRegression`` (tracker #105), one output per call;
    ``random_state`` is seeded from the audit's ``rng`` (bridged); claims from the objects'
    ``epsilon``/``delta`` attributes or the tools' ``epsilon`` argument. The float samplers
    (Laplace family, Gaussian family) are expected to leak through their float outputs
    (Haney et al. 2022; tracker #94); the integer-valued ones (geometric, exponential) to pass."""
    import warnings

    from diffprivlib import mechanisms, tools
    from diffprivlib.models import LinearRegression

    relation = "replace one record in [0, 1] of a sum (sensitivity 1)"

    def mech_case(name: str, make: Callable[..., Any], expected: str, value: Callable[[Any], Any] = np.sum,
                  **kwargs: Any) -> LibraryCase:
        probe = make(**kwargs)
        call = (lambda db, rs: make(random_state=rs, **kwargs).randomise(value(db)))
        return LibraryCase("diffprivlib", "diffprivlib", name, per_call_mechanism(call), _count_pairs(),
                           float(probe.epsilon), float(probe.delta), f"{type(probe).__name__}.epsilon, .delta",
                           relation, _BRIDGED_RS, expected, _DPL_BUG_94 if expected == "refute" else "", answer=value)

    def tool_case(name: str, tool: Callable[..., Any], expected: str, answer: Callable[[Any], Any],
                  **kwargs: Any) -> LibraryCase:
        call = (lambda db, rs: float(tool(np.asarray(db, dtype=float), epsilon=1.0, random_state=rs, **kwargs)))
        return LibraryCase("diffprivlib", "diffprivlib", name, per_call_mechanism(call), _count_pairs(), 1.0, 0.0,
                           f"{tool.__name__}(epsilon=1.0) argument", "replace one record in [0, 1]", _BRIDGED_RS,
                           expected, _DPL_BUG_94 if expected == "refute" else "", answer=answer)

    def regression(db: Any, rs: np.random.RandomState) -> float:
        features = np.asarray(db, dtype=float).reshape(-1, 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = LinearRegression(epsilon=1.0, bounds_X=(0.0, 1.0), bounds_y=(0.0, 1.0), fit_intercept=False,
                                     random_state=rs).fit(features, np.zeros(len(features)))
        return float(model.coef_[0])

    # #105: the X_i^2 term of the objective gets sensitivity max(|lower|, |lower|)^2 = 0, so sum x^2 is
    # released exactly; two datasets whose sums of x^2 differ (1 vs 0.01) scale the coefficient's noise by 100.
    low = np.zeros(_RECORDS)
    regression_pairs = [(np.r_[1.0, low[1:]], np.r_[0.1, low[1:]])]
    count = {"value": lambda db: int(np.sum(db))}
    return [
        mech_case("mechanisms.Laplace (eps 1)", mechanisms.Laplace, "refute", epsilon=1.0, sensitivity=1.0),
        mech_case("mechanisms.LaplaceTruncated (eps 1, [-50, 60])", mechanisms.LaplaceTruncated, "refute",
                  epsilon=1.0, sensitivity=1.0, lower=-50.0, upper=60.0),
        mech_case("mechanisms.LaplaceBoundedDomain (eps 1, [-50, 60])", mechanisms.LaplaceBoundedDomain, "refute",
                  epsilon=1.0, sensitivity=1.0, lower=-50.0, upper=60.0),
        mech_case("mechanisms.Geometric (eps 1)", mechanisms.Geometric, "pass", **count, epsilon=1.0, sensitivity=1),
        mech_case("mechanisms.Gaussian (eps 0.5, 1e-5)", mechanisms.Gaussian, "refute", epsilon=0.5, delta=1e-5,
                  sensitivity=1.0),
        mech_case("mechanisms.GaussianAnalytic (1, 1e-5)", mechanisms.GaussianAnalytic, "refute", epsilon=1.0,
                  delta=1e-5, sensitivity=1.0),
        LibraryCase("diffprivlib", "diffprivlib", "mechanisms.Exponential (eps 1, utility -abs(k - sum))",
                    per_call_mechanism(lambda db, rs: mechanisms.Exponential(
                        epsilon=1.0, sensitivity=1.0, utility=[-abs(k - float(np.sum(db))) for k in range(4)],
                        random_state=rs).randomise()),
                    _count_pairs(), 1.0, 0.0, "Exponential(epsilon=1.0) argument", relation, _BRIDGED_RS, "pass"),
        tool_case("tools.mean (eps 1, bounds [0, 1])", tools.mean, "refute", np.mean, bounds=(0.0, 1.0)),
        tool_case("tools.count_nonzero (eps 1)", tools.count_nonzero, "pass", np.count_nonzero),
        LibraryCase("diffprivlib", "diffprivlib", "models.LinearRegression coef (eps 1, X in [0, 1]) #105",
                    per_call_mechanism(regression), regression_pairs, 1.0, 0.0, "LinearRegression(epsilon=1.0)",
                    "replace one record (x, y) in [0, 1]^2", _BRIDGED_RS, "refute", _DPL_BUG_105,
                    small_samples=10_000, pairs_label="x = (1, 0, ...) vs (0.1, 0, ...), y = 0", float_events=False),
    ]


def pydp_cases() -> list[LibraryCase]:
    """python-dp's ``BoundedSum``, ``BoundedMean`` (records clamped to [0, 1]) and ``Count``
    (ε = 1), one result per call; its noise comes from Google's C++ library (secure, own
    generator: not bridged)."""
    from pydp.algorithms.laplacian import BoundedMean, BoundedSum, Count

    def run(make: Callable[[], Any]) -> Callable[[Any, int, np.random.Generator], np.ndarray]:
        def mechanism(db: Any, n: int, rng: np.random.Generator) -> np.ndarray:
            data = [float(v) for v in np.asarray(db, dtype=float)]
            return np.fromiter((make().quick_result(data) for _ in range(n)), dtype=float, count=n)
        return mechanism

    bounds = {"epsilon": 1.0, "lower_bound": 0.0, "upper_bound": 1.0, "dtype": "float"}
    relation = "replace one record in [0, 1]"
    source = "{}(epsilon=1.0) argument"
    add_one = [(np.zeros(_RECORDS), np.zeros(_RECORDS + 1))]
    return [LibraryCase("python-dp", "python-dp", "BoundedSum (eps 1, bounds [0, 1])",
                        run(lambda: BoundedSum(**bounds)), _count_pairs(), 1.0, 0.0, source.format("BoundedSum"),
                        relation, _OWN_RNG, "pass", answer=np.sum),
            LibraryCase("python-dp", "python-dp", "BoundedMean (eps 1, bounds [0, 1])",
                        run(lambda: BoundedMean(**bounds)), _count_pairs(), 1.0, 0.0, source.format("BoundedMean"),
                        relation, _OWN_RNG, "pass", answer=np.mean),
            LibraryCase("python-dp", "python-dp", "Count (eps 1)", run(lambda: Count(epsilon=1.0, dtype="float")),
                        add_one, 1.0, 0.0, source.format("Count"), "add or remove one record", _OWN_RNG, "pass",
                        pairs_label="10 records vs 11", answer=len)]


def _pipeline_dp_run(metric_name: str, epsilon: float, noise: str = "LAPLACE", delta: float = 0.0
                     ) -> tuple[Callable[[Any, int, np.random.Generator], np.ndarray], float, float]:
    """One ``DPEngine.aggregate`` on ``pipeline_dp.LocalBackend`` gives ``n`` outputs: ``n`` public
    partitions, each holding its own copy of the dataset under distinct privacy ids, and every id
    contributing one record to one partition (``max_partitions_contributed=1``), so each
    partition's noisy metric is one release of the audited mechanism. ``noise`` names the
    ``pipeline_dp.NoiseKind`` and ``delta`` the accountant's total δ. Returns the mechanism and the
    (ε, δ) the ``BudgetAccountant`` gave it (read from a probe run)."""
    import pipeline_dp

    metric = getattr(pipeline_dp.Metrics, metric_name)

    def aggregate(db: Any, n: int) -> tuple[np.ndarray, Any]:
        accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=epsilon, total_delta=delta)
        engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
        params = pipeline_dp.AggregateParams(noise_kind=getattr(pipeline_dp.NoiseKind, noise), metrics=[metric],
                                             max_partitions_contributed=1, max_contributions_per_partition=1,
                                             min_value=0.0, max_value=1.0)
        extractors = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                                partition_extractor=lambda r: r[1], value_extractor=lambda r: r[2])
        rows = [((k, i), k, float(v)) for k in range(n) for i, v in enumerate(np.asarray(db, dtype=float))]
        result = engine.aggregate(rows, params, extractors, public_partitions=list(range(n)))
        accountant.compute_budgets()
        out = dict(result)
        values = np.array([getattr(out[k], metric_name.lower()) for k in range(n)], dtype=float)
        return values, accountant

    def mechanism(db: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        return aggregate(db, n)[0]

    _, accountant = aggregate(np.zeros(1), 1)
    spec = accountant._mechanisms[0].mechanism_spec  # the accountant's record of the budget it gave
    return mechanism, float(spec.eps), float(spec.delta)


def pipeline_dp_cases() -> list[LibraryCase]:
    """Pipeline-DP's COUNT and SUM (values clamped to [0, 1], Laplace noise, total ε = 1) and its
    SUM with Gaussian noise (total (1, 10⁻⁵), drawn by python-dp's C++ Gaussian) on its local
    backend, vector form through public partitions (see :func:`_pipeline_dp_run`). The Gaussian
    SUM leaks through its float bits: on the sum 0 a share of the outputs in [−2, −1) are odd
    multiples of 2⁻⁵², which 1 + (noise) cannot produce; expected "refute". Claims
    read from the ``NaiveBudgetAccountant`` after ``compute_budgets``; its relation is adding or
    removing one privacy unit; its noise ignores ``rng`` (not seed-reproducible)."""
    relation = "add or remove one privacy unit (1 partition, 1 contribution)"
    pairs = [(np.zeros(_RECORDS), np.r_[np.zeros(_RECORDS), 1.0])]
    source = "NaiveBudgetAccountant after compute_budgets (mechanism_spec.eps, .delta)"
    cases = []
    for metric in ("COUNT", "SUM"):
        mechanism, eps, delta = _pipeline_dp_run(metric, 1.0)
        cases.append(LibraryCase("pipeline-dp", "pipeline-dp", f"DPEngine {metric} (LocalBackend, eps 1)",
                                 mechanism, pairs, eps, delta, source, relation,
                                 "not bridged: draws from its own noise module and ignores rng "
                                 "(not seed-reproducible)", "pass", pairs_label="10 records at 0 vs + one at 1",
                                 answer=len if metric == "COUNT" else np.sum))
    mechanism, eps, delta = _pipeline_dp_run("SUM", 1.0, "GAUSSIAN", 1e-5)
    cases.append(LibraryCase("pipeline-dp", "pipeline-dp", "DPEngine SUM, Gaussian noise (LocalBackend, eps 1, "
                             "delta 1e-5)", mechanism, pairs, eps, delta, source, relation,
                             "not bridged: draws from its own noise module and ignores rng (not seed-reproducible)",
                             "refute", pairs_label="10 records at 0 vs + one at 1", answer=np.sum))
    return cases


def library_cases() -> list[LibraryCase]:
    """Every case of the libraries that are installed (a missing library is left out)."""
    cases: list[LibraryCase] = []
    for make in (opendp_cases, opendp_float_sum_cases, diffprivlib_cases, pydp_cases, pipeline_dp_cases):
        try:
            cases += make()
        except ImportError:
            continue
    return cases
