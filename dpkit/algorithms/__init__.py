"""Private distributed learning algorithms of the seed papers, on a shared ADMM substrate.

Substrate: :mod:`~dpkit.algorithms.data` (Adult, built-in, synthetic, LIBSVM/CSV),
:mod:`~dpkit.algorithms.partition`, :mod:`~dpkit.algorithms.graphs`, :mod:`~dpkit.algorithms.losses`,
:mod:`~dpkit.algorithms.solvers`, :mod:`~dpkit.algorithms.admm` (non-private decentralised and star
ADMM), :mod:`~dpkit.algorithms.centralised`, :mod:`~dpkit.algorithms.evaluation`,
:mod:`~dpkit.algorithms.result`, :mod:`~dpkit.algorithms.privacy` (paper rules and corrected bounds).

Seed 000: :func:`pp_admm`, :func:`ipp_admm`. Seed 004: :func:`dp_admm`, :func:`admm_pvp`.
:mod:`~dpkit.algorithms.registry` maps CLI names to runners.
"""

from dpkit.algorithms.admm import decentralised_admm, star_admm
from dpkit.algorithms.admm_pvp import admm_pvp
from dpkit.algorithms.centralised import centralised_fit
from dpkit.algorithms.data import (
    Dataset,
    load_adult,
    load_builtin,
    load_csv,
    load_dataset,
    load_libsvm,
    make_synthetic,
    train_test_split,
)
from dpkit.algorithms.dp_admm import dp_admm
from dpkit.algorithms.evaluation import accuracy, consensus_gap, empirical_risk
from dpkit.algorithms.graphs import Graph, complete, from_adjacency, random_connected, ring, star
from dpkit.algorithms.ipp_admm import ipp_admm
from dpkit.algorithms.losses import L1, L2, Hinge, HuberHinge, Logistic
from dpkit.algorithms.partition import partition
from dpkit.algorithms.pp_admm import pp_admm, seed000_parameters
from dpkit.algorithms.registry import ALGORITHMS, get_algorithm, register, run_algorithm
from dpkit.algorithms.result import TrainingResult
from dpkit.algorithms.solvers import LocalObjective, solve

__all__ = [
    "Dataset", "load_adult", "load_builtin", "load_csv", "load_dataset", "load_libsvm", "make_synthetic",
    "train_test_split", "partition", "Graph", "ring", "complete", "star", "random_connected", "from_adjacency",
    "Logistic", "HuberHinge", "Hinge", "L1", "L2", "LocalObjective", "solve", "decentralised_admm", "star_admm",
    "centralised_fit", "accuracy", "consensus_gap", "empirical_risk", "TrainingResult", "pp_admm", "ipp_admm",
    "seed000_parameters", "dp_admm", "admm_pvp", "ALGORITHMS", "get_algorithm", "register", "run_algorithm",
]
