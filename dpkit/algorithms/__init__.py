"""Private distributed learning: the algorithms of five papers on one substrate, and a baseline.

One call trains any of them: :func:`train` (``dpkit train``) returns a :class:`TrainingResult`
whose ``guarantee`` an accountant computed from the run's ledger and whose ``paper_claim`` is the
paper's own, labelled claim. Each algorithm is also callable directly:

==================  ===========================================================================
``train_pp_admm``    PP-ADMM (Ding et al. 2020, Alg. 1)
``train_ipp_admm``   IPP-ADMM (Ding et al. 2020, Alg. 2)
``train_dp_admm``    DP-ADMM (Huang et al. 2019, Alg. 3)
``train_admm_pvp``   ADMM with primal variable perturbation (Huang et al. 2019, Alg. 2)
``train_hetero_admm`` label randomization + perturbed ADMM (Wang et al. 2020)
``train_a_ddp``      A-DDP (Cheng et al. 2020, Alg. 1)
``train_dvp_admm``   DVP ADMM (Zhang & Zhu 2016, Alg. 2)
``train_dp_logreg``  centralised DP logistic regression (the private baseline)
==================  ===========================================================================

One subpackage per paper holds its algorithm, noise and accounting, claims and audit instances:
:mod:`~dpkit.algorithms.pp_admm`, :mod:`~dpkit.algorithms.dp_admm`, :mod:`~dpkit.algorithms.hetero_admm`,
:mod:`~dpkit.algorithms.a_ddp`, :mod:`~dpkit.algorithms.dvp_admm`; :mod:`~dpkit.algorithms.baselines` holds
the non-private references and the centralised DP baseline. They stand on
:mod:`~dpkit.algorithms.substrate` (data and the packaged UCI Adult, partition, graphs, losses, one
batched Newton solver, one decentralised and one star ADMM loop, budget, result). At the root:
:mod:`~dpkit.algorithms.training` (:func:`train`), :mod:`~dpkit.algorithms.registry` and
:mod:`~dpkit.algorithms.audit_instances` (audit instances that run the real algorithm code).
"""

from dpkit.algorithms.a_ddp.algorithm import train_a_ddp
from dpkit.algorithms.substrate.admm_loops import decentralised_admm, star_admm
from dpkit.algorithms.dp_admm.admm_pvp import train_admm_pvp
from dpkit.algorithms.substrate.budget import Budget, calibrate_noise
from dpkit.algorithms.substrate.data import Dataset, load_adult, load_dataset, make_synthetic, train_test_split
from dpkit.algorithms.dp_admm.dp_admm import train_dp_admm
from dpkit.algorithms.baselines.dp_logreg import train_dp_logreg
from dpkit.algorithms.dvp_admm.algorithm import train_dvp_admm
from dpkit.algorithms.hetero_admm.algorithm import train_hetero_admm
from dpkit.algorithms.pp_admm.ipp_admm import train_ipp_admm
from dpkit.algorithms.pp_admm.pp_admm import train_pp_admm
from dpkit.algorithms.registry import ALGORITHMS, get_algorithm
from dpkit.algorithms.substrate.result import PaperClaim, TrainingResult
from dpkit.algorithms.training import train

__all__ = [
    "train", "TrainingResult", "PaperClaim", "Budget", "calibrate_noise", "ALGORITHMS", "get_algorithm",
    "train_pp_admm", "train_ipp_admm", "train_dp_admm", "train_admm_pvp", "train_hetero_admm", "train_a_ddp",
    "train_dvp_admm", "train_dp_logreg", "decentralised_admm", "star_admm",
    "Dataset", "load_adult", "load_dataset", "make_synthetic", "train_test_split",
]
