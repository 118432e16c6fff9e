"""DP-ADMM and ADMM-PVP: Huang, Hu, Guo, Chan-Tin & Gong, "DP-ADMM: ADMM-Based Distributed Learning
With Differential Privacy", IEEE Transactions on Information Forensics and Security 14(6), 2019
(Algorithms 3 and 2).

:mod:`~dpkit.algorithms.dp_admm.dp_admm` (linearised star ADMM with perturbed iterates, its step-size
rules and the paper's claim), :mod:`~dpkit.algorithms.dp_admm.steps` (one round: step sizes, the
linearised local step, its sensitivity and noise), :mod:`~dpkit.algorithms.dp_admm.admm_pvp` (exact
local solves with primal variable perturbation), and their audit instances
:mod:`~dpkit.algorithms.dp_admm.audit_instances` and :mod:`~dpkit.algorithms.dp_admm.admm_pvp_audit_instances`.
"""

from dpkit.algorithms.dp_admm.admm_pvp import train_admm_pvp
from dpkit.algorithms.dp_admm.dp_admm import train_dp_admm

__all__ = ["train_dp_admm", "train_admm_pvp"]
