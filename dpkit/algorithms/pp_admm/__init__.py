"""PP-ADMM and IPP-ADMM: Ding, Wang, Liang, Bi & Pan, "Towards Plausible Differentially Private ADMM
Based Distributed Machine Learning", CIKM 2020 (Algorithms 1 and 2).

:mod:`~dpkit.algorithms.pp_admm.pp_admm` (noisy approximate local minimisers, their sensitivity, noise
and the paper's claim), :mod:`~dpkit.algorithms.pp_admm.ipp_admm` (the same, broadcasts gated by the
sparse vector technique) and :mod:`~dpkit.algorithms.pp_admm.audit_instances` (the minimiser release
and the SVT gate as audit instances).
"""

from dpkit.algorithms.pp_admm.ipp_admm import train_ipp_admm
from dpkit.algorithms.pp_admm.pp_admm import train_pp_admm

__all__ = ["train_pp_admm", "train_ipp_admm"]
