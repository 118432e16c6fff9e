"""Defaults that travel: the number of agents from n, and a warning when noise is predicted to swamp the signal.

Both use public quantities only (the training-set size, the agents' sizes, d, ε and the calibrated
noise a run reports), never the rows themselves, so they cost no privacy.

Agents. Each agent's release noise scales like 1/|D_i| (its sensitivity is 2/|D_i| over a
strong-convexity constant), so splitting a small table over an algorithm's Adult-sized number of
agents drowns the model: a 4.9k-row table on 20 agents of 195 rows fell below the majority class.
:func:`default_agents` keeps every agent at ≥ :data:`MIN_ROWS_PER_AGENT` rows:

    agents = clamp(n_train // MIN_ROWS_PER_AGENT, minimum, spec.agents)

with ``minimum`` 2 for graph algorithms (a graph needs two nodes) and 1 otherwise. On Adult
(36,000 training rows) it keeps every algorithm's documented number of agents.

>>> from dpkit.algorithms.registry import get_algorithm
>>> default_agents(get_algorithm("dp-admm"), 36000), default_agents(get_algorithm("dp-admm"), 3900)
(20, 2)
>>> default_agents(get_algorithm("pp-admm"), 800), default_agents(get_algorithm("dp-logreg"), 800)
(2, 1)
"""

from __future__ import annotations

import math

from dpkit._validation import check_integer, check_positive
from dpkit.algorithms.substrate.spec import AlgorithmSpec

__all__ = ["MIN_ROWS_PER_AGENT", "default_agents", "small_agents_warning", "NOISE_TO_SIGNAL_LIMIT",
           "predicted_noise_to_signal", "noise_warning"]

MIN_ROWS_PER_AGENT = 1500
"""Fewest training rows per agent the default number of agents gives a private run (when the
table has them). Chosen on validation splits carved from the training rows of three tables
(``benchmarks/tune_defaults.py``): at 1,000 rows per agent the star algorithms still fell below
the majority class on a weak-signal table; Adult's defaults (≥ 1,750 rows per agent) are unchanged."""

NOISE_TO_SIGNAL_LIMIT = 1.0
"""The predicted noise-to-signal ratio (:func:`predicted_noise_to_signal`) above which a run warns."""


def default_agents(spec: AlgorithmSpec, n_train: int, floor: int = MIN_ROWS_PER_AGENT) -> int:
    """The number of agents when the user gives none: ``clamp(n_train // floor, minimum, spec.agents)``
    (module docstring; ``floor`` defaults to :data:`MIN_ROWS_PER_AGENT`); a centralised algorithm
    takes 1, a non-private one its spec's."""
    n_train = check_integer("n_train", n_train, minimum=0)
    floor = check_integer("floor", floor, minimum=1)
    if spec.topology == "central":
        return 1
    if not spec.private:
        return spec.agents
    minimum = 2 if spec.topology == "graph" else 1
    return max(minimum, min(spec.agents, n_train // floor))


def small_agents_warning(sizes: list[int], private: bool = True) -> str | None:
    """A warning when a private run's smallest agent holds fewer than :data:`MIN_ROWS_PER_AGENT`
    rows (the noise is then likely to swamp the signal), else None. Uses only the public sizes.

    >>> small_agents_warning([195] * 20)[:40]
    'warning: agents hold as few as 195 rows '
    >>> small_agents_warning([7000] * 5) is None
    True
    """
    smallest = min(sizes)
    if not private or smallest >= MIN_ROWS_PER_AGENT:
        return None
    return (f"warning: agents hold as few as {smallest} rows (fewer than {MIN_ROWS_PER_AGENT}); the per-agent noise "
            f"scales like 1/rows and may swamp the signal: compare with the majority class, or use fewer agents "
            f"(--agents)")


def predicted_noise_to_signal(rows_per_agent: float, d: int, epsilon: float) -> float:
    """√d / (ε · rows_per_agent / 100): the output-perturbation noise of one agent's model in
    d dimensions, relative to a unit-norm signal, at the 100-records-per-unit-ε scale of
    Chaudhuri, Monteleoni & Sarwate (2011, Thm. 6: the noise vector's norm is ~ d/(nελ) and its
    projection on a row ~ √d/(nελ)). A rough, public predictor: it reads n, d and ε only.

    >>> round(predicted_noise_to_signal(195, 20, 1.0), 2), round(predicted_noise_to_signal(1800, 104, 1.0), 2)
    (2.29, 0.57)
    """
    rows = check_positive("rows_per_agent", rows_per_agent)
    d = check_integer("d", d, minimum=1)
    return math.sqrt(d) / (check_positive("epsilon", epsilon) * rows / 100.0)


def noise_warning(sizes: list[int], d: int, epsilon: float | None) -> str | None:
    """A warning when :func:`predicted_noise_to_signal` of the smallest agent exceeds
    :data:`NOISE_TO_SIGNAL_LIMIT` (public n per agent, d and ε), else None (also for a
    non-private run, ``epsilon`` None)."""
    if epsilon is None:
        return None
    ratio = predicted_noise_to_signal(min(sizes), d, epsilon)
    if ratio <= NOISE_TO_SIGNAL_LIMIT:
        return None
    return (f"warning: predicted noise-to-signal {ratio:.2f} > {NOISE_TO_SIGNAL_LIMIT:g} (from public quantities: "
            f"{min(sizes)} rows per agent, d = {d}, epsilon = {epsilon:g}); the model may do no better than the "
            f"majority class: use fewer agents, fewer features or a larger epsilon")
