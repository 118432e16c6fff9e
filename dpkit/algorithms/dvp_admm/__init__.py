"""DVP ADMM: Zhang & Zhu, "A Dual Perturbation Approach for Differential Private ADMM-Based Distributed
Empirical Risk Minimization", ACM Workshop on Artificial Intelligence and Security (AISec) 2016 (Algorithm 2).

:mod:`~dpkit.algorithms.dvp_admm.algorithm` (the variants and their defaults),
:mod:`~dpkit.algorithms.dvp_admm.noise` (the dual noise, one function per variant),
:mod:`~dpkit.algorithms.dvp_admm.rounds` (local objectives, the noisy dual term, the loop) and
:mod:`~dpkit.algorithms.dvp_admm.audit_instances` (the transcript of T rounds as an audit instance).
"""

from dpkit.algorithms.dvp_admm.algorithm import train_dvp_admm

__all__ = ["train_dvp_admm"]
