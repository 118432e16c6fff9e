"""A-DDP: Cheng, Liu, Wang & Lu, "Adaptive Distributed Differential Privacy with SGD", AAAI 2020
(Algorithm 1).

:mod:`~dpkit.algorithms.a_ddp.algorithm` (the training loop), :mod:`~dpkit.algorithms.a_ddp.plan`
(noise, rounds, clip, step size and regularisation from the budget), :mod:`~dpkit.algorithms.a_ddp.claims`
(the paper's own calibration and its Theorem 1, for reproduction), :mod:`~dpkit.algorithms.a_ddp.upload`
(one user's noisy upload, the mechanism) and :mod:`~dpkit.algorithms.a_ddp.audit_instances` (that upload
as an audit instance).
"""

from dpkit.algorithms.a_ddp.algorithm import train_a_ddp

__all__ = ["train_a_ddp"]
