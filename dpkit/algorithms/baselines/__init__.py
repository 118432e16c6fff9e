"""The baselines the private algorithms are read against.

:mod:`~dpkit.algorithms.baselines.centralised` (the non-private exact minimiser of the distributed
objective), :mod:`~dpkit.algorithms.baselines.admm` (the non-private decentralised ADMM registered as
``admm``), :mod:`~dpkit.algorithms.baselines.dp_logreg` (centralised DP logistic regression by noisy
gradient descent, Song, Chaudhuri & Sarwate 2013; Bassily, Smith & Thakurta 2014, registered as
``dp-logreg``) and :mod:`~dpkit.algorithms.baselines.dp_logreg_audit` (its audit instance).
"""

from dpkit.algorithms.baselines.centralised import centralised_fit
from dpkit.algorithms.baselines.dp_logreg import train_dp_logreg

__all__ = ["centralised_fit", "train_dp_logreg"]
