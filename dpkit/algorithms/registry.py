"""Algorithms by name: the table :func:`dpkit.algorithms.train` and ``dpkit train`` read.

Each algorithm module defines ``SPEC`` (an :class:`~dpkit.algorithms.substrate.spec.AlgorithmSpec`); this
module only collects them, in the order ``dpkit train --help`` lists them.

>>> list(ALGORITHMS)[:3]
['admm', 'dp-logreg', 'pp-admm']
>>> get_algorithm("dp-logreg").topology
'central'
"""

from __future__ import annotations

from dpkit.algorithms.a_ddp.algorithm import SPEC as A_DDP
from dpkit.algorithms.baselines.admm import SPEC as ADMM
from dpkit.algorithms.dp_admm.admm_pvp import SPEC as ADMM_PVP
from dpkit.algorithms.dp_admm.dp_admm import SPEC as DP_ADMM
from dpkit.algorithms.baselines.dp_logreg import SPEC as DP_LOGREG
from dpkit.algorithms.dvp_admm.algorithm import SPEC as DVP_ADMM
from dpkit.algorithms.hetero_admm.algorithm import SPEC as HETERO_ADMM
from dpkit.algorithms.pp_admm.ipp_admm import SPEC as IPP_ADMM
from dpkit.algorithms.pp_admm.pp_admm import SPEC as PP_ADMM
from dpkit.algorithms.substrate.spec import AlgorithmSpec

__all__ = ["ALGORITHMS", "get_algorithm"]

ALGORITHMS: dict[str, AlgorithmSpec] = {
    spec.name: spec
    for spec in (ADMM, DP_LOGREG, PP_ADMM, IPP_ADMM, DP_ADMM, ADMM_PVP, HETERO_ADMM, A_DDP, DVP_ADMM)
}
"""Name → spec."""


def get_algorithm(name: str) -> AlgorithmSpec:
    """The spec registered as ``name`` (ValueError listing the known names otherwise)."""
    if name not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {tuple(ALGORITHMS)}, got algorithm={name!r}")
    return ALGORITHMS[name]
