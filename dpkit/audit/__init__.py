"""Empirical privacy auditing: ε lower bounds and tests of a claimed (ε, δ) for black-box mechanisms.

>>> from dpkit.audit import audit, AuditResult, StatDPPatterns, from_scalar
"""

from dpkit.audit.api import ASSUMPTIONS, AUTO_MAX_SAMPLES, DEFAULT_SAMPLES, audit, minimum_samples
from dpkit.audit.curve import GAUSSIAN_ASSUMPTION, gaussian_epsilon_lower_bound, mu_lower_bound
from dpkit.audit.float_events import FloatReachability, FloatWitness, find_float_witness, float_reachability
from dpkit.audit.pairs import Pair, StatDPPatterns, check_pair, resolve_pairs
from dpkit.audit.result import AuditResult
from dpkit.audit.rng_bridge import per_call_mechanism, random_state_from
from dpkit.audit.runner import from_scalar
from dpkit.audit.search import SearchedAudit, SearchResult, audit_searched, search_pairs
from dpkit.audit.scores import (
    ScoreAuditResult,
    audit_one_run,
    audit_scores,
    audit_scores_gdp,
    gdp_epsilon,
    one_run_p_value,
)
from dpkit.audit.statistics import (
    ceiling_epsilon,
    detectable_epsilon,
    epsilon_lower_bound,
    poisson_epsilon_lower_bound,
    poisson_sample_mean,
    samples_to_refute,
)

__all__ = [
    "audit",
    "AuditResult",
    "DEFAULT_SAMPLES",
    "AUTO_MAX_SAMPLES",
    "minimum_samples",
    "ASSUMPTIONS",
    "GAUSSIAN_ASSUMPTION",
    "mu_lower_bound",
    "gaussian_epsilon_lower_bound",
    "StatDPPatterns",
    "Pair",
    "check_pair",
    "resolve_pairs",
    "from_scalar",
    "ScoreAuditResult",
    "audit_scores",
    "audit_scores_gdp",
    "audit_one_run",
    "one_run_p_value",
    "gdp_epsilon",
    "ceiling_epsilon",
    "epsilon_lower_bound",
    "poisson_epsilon_lower_bound",
    "poisson_sample_mean",
    "samples_to_refute",
    "detectable_epsilon",
    "find_float_witness",
    "float_reachability",
    "FloatWitness",
    "FloatReachability",
    "search_pairs",
    "audit_searched",
    "SearchResult",
    "SearchedAudit",
    "random_state_from",
    "per_call_mechanism",
]
