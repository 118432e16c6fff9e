"""The substrate every algorithm of :mod:`dpkit.algorithms` stands on; nothing here belongs to one paper.

:mod:`~dpkit.algorithms.substrate.data` (the packaged UCI Adult in ``datasets/``, synthetic data, loaders),
:mod:`~dpkit.algorithms.substrate.partition` (split a dataset across agents),
:mod:`~dpkit.algorithms.substrate.graphs` (communication graphs), :mod:`~dpkit.algorithms.substrate.losses`
(margin losses and regularisers), :mod:`~dpkit.algorithms.substrate.solvers` (one batched Newton solver),
:mod:`~dpkit.algorithms.substrate.admm_loops` (one decentralised loop, one star loop, their dual updates),
:mod:`~dpkit.algorithms.substrate.evaluation` (accuracy, risk, consensus),
:mod:`~dpkit.algorithms.substrate.budget` (a run's budget and noise calibrated on the whole run),
:mod:`~dpkit.algorithms.substrate.private_ranges` (column ranges from the training rows, with noise charged to the run),
:mod:`~dpkit.algorithms.substrate.private_quantiles` (clip points at private quantiles, for heavy-tailed columns),
:mod:`~dpkit.algorithms.substrate.prior_fallback` (the private choice between the trained model and the class prior),
:mod:`~dpkit.algorithms.substrate.result` (the one result type), :mod:`~dpkit.algorithms.substrate.spec`
(how an algorithm presents itself to the registry) and :mod:`~dpkit.algorithms.substrate.audit_instance`
(the audit-instance type every paper's ``audit_instances`` module builds).
"""
