"""Adapters that audit other DP libraries as shipped: diffprivlib, OpenDP, python-dp (``pydp``).

Each :class:`LibraryCase` wraps one call of a library as ``mechanism(database, n, rng)`` for
:func:`dpkit.audit.audit`, with

* the **claim read from the library itself** (OpenDP's privacy map, diffprivlib's ``epsilon``
  and ``delta`` attributes, python-dp's ``epsilon`` argument) and where it came from;
* the **neighbouring relation** the library's claim refers to, and **pairs built from the record
  domain**: datasets of extreme records (all at the lower bound, and one record moved to the
  upper bound), not a fixed shift of the answer;
* the **RNG bridge**: ``"bridged"`` when the audit's ``rng`` drives the library (diffprivlib's
  ``random_state``), otherwise why it cannot be (OpenDP and python-dp draw from their own
  secure generators); :func:`seed_reproducible` checks it by running twice on one seed.

The libraries are imported lazily, inside the functions; install them with the ``gallery`` extra.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import math
from typing import Any, Callable

import numpy as np

__all__ = ["LibraryCase", "seed_reproducible", "opendp_cases", "diffprivlib_cases", "pydp_cases", "library_cases"]

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
    """OpenDP's float Laplace and Gaussian on a sum of records in [0, 1] (l1/l2 distance 1 of
    the sum: one record changed), vector form (one call gives ``n`` outputs); claims from
    ``measurement.map(1)``; the Gaussian's ρ-zCDP claim is converted to (ε, 10⁻⁵)-DP by
    ε = ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    laplace = dp.m.make_laplace(space, dp.l1_distance(T=float), scale=1.0)
    gaussian = dp.m.make_gaussian(space, dp.l2_distance(T=float), scale=2.0)

    def run(measurement: Any) -> Callable[[Any, int, np.random.Generator], np.ndarray]:
        def mechanism(db: Any, n: int, rng: np.random.Generator) -> np.ndarray:
            return np.asarray(measurement([float(np.sum(db))] * n), dtype=float)
        return mechanism

    rho, delta = float(gaussian.map(1.0)), 1e-5
    relation = "replace one record in [0, 1] of a sum (distance 1)"
    source = "opendp measurement.map(d_in=1.0)"
    return [
        LibraryCase("opendp", "opendp", "make_laplace (float, scale 1)", run(laplace), _count_pairs(),
                    float(laplace.map(1.0)), 0.0, source, relation, _OWN_RNG, "pass"),
        LibraryCase("opendp", "opendp", "make_laplace, false claim eps/2", run(laplace), _count_pairs(),
                    float(laplace.map(1.0)) / 2, 0.0, source + ", halved", relation, _OWN_RNG, "refute"),
        LibraryCase("opendp", "opendp", "make_gaussian (float, scale 2)", run(gaussian), _count_pairs(),
                    rho + 2 * math.sqrt(rho * math.log(1 / delta)), delta, source + f" (rho = {rho:g} zCDP)",
                    relation, _OWN_RNG, "pass"),
    ]


def diffprivlib_cases() -> list[LibraryCase]:
    """diffprivlib's Laplace and analytic Gaussian mechanisms on a sum of records in [0, 1]
    (sensitivity 1), one output per ``randomise`` call; ``random_state`` is seeded from the
    audit's ``rng`` (bridged); claims from the mechanism's ``epsilon``/``delta`` attributes."""
    from diffprivlib.mechanisms import GaussianAnalytic, Laplace

    def run(make: Callable[[Any], Any]) -> Callable[[Any, int, np.random.Generator], np.ndarray]:
        def mechanism(db: Any, n: int, rng: np.random.Generator) -> np.ndarray:
            mech = make(np.random.RandomState(int(rng.integers(2**32))))
            value = float(np.sum(db))
            return np.fromiter((mech.randomise(value) for _ in range(n)), dtype=float, count=n)
        return mechanism

    laplace = Laplace(epsilon=1.0, sensitivity=1.0)
    gauss = GaussianAnalytic(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    relation = "replace one record in [0, 1] of a sum (sensitivity 1)"
    bridged = "bridged: random_state=RandomState(seed drawn from rng)"
    bug = "https://github.com/IBM/differential-privacy-library/issues/94"
    return [
        LibraryCase("diffprivlib", "diffprivlib", "mechanisms.Laplace (eps 1)",
                    run(lambda rs: Laplace(epsilon=1.0, sensitivity=1.0, random_state=rs)), _count_pairs(),
                    laplace.epsilon, laplace.delta, "Laplace.epsilon, .delta", relation, bridged, "refute", bug),
        LibraryCase("diffprivlib", "diffprivlib", "mechanisms.GaussianAnalytic (1, 1e-5)",
                    run(lambda rs: GaussianAnalytic(epsilon=1.0, delta=1e-5, sensitivity=1.0, random_state=rs)),
                    _count_pairs(), gauss.epsilon, gauss.delta, "GaussianAnalytic.epsilon, .delta", relation, bridged,
                    "refute", bug),
    ]


def pydp_cases() -> list[LibraryCase]:
    """python-dp's ``BoundedSum`` (records clamped to [0, 1], ε = 1), one result per call; its
    noise comes from Google's C++ library (secure, own generator: not bridged)."""
    from pydp.algorithms.laplacian import BoundedSum

    def mechanism(db: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        data = [float(v) for v in np.asarray(db, dtype=float)]
        return np.fromiter((BoundedSum(epsilon=1.0, lower_bound=0.0, upper_bound=1.0, dtype="float").quick_result(data)
                            for _ in range(n)), dtype=float, count=n)

    return [LibraryCase("python-dp", "python-dp", "BoundedSum (eps 1, bounds [0, 1])", mechanism, _count_pairs(),
                        1.0, 0.0, "BoundedSum(epsilon=1.0) argument", "replace one record in [0, 1]", _OWN_RNG,
                        "pass")]


def library_cases() -> list[LibraryCase]:
    """Every case of the libraries that are installed (a missing library is left out)."""
    cases: list[LibraryCase] = []
    for make in (opendp_cases, diffprivlib_cases, pydp_cases):
        try:
            cases += make()
        except ImportError:
            continue
    return cases
