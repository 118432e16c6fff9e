"""Audit scenarios (the audit instances): small worst-case instances of each algorithm's privacy claim, run by the real
algorithm code, as black-box targets for :func:`dpkit.audit.audit` (``dpkit audit --algorithm``).

Each paper's subpackage has an ``audit_instances`` module (the baseline's is
:mod:`~dpkit.algorithms.baselines.dp_logreg_audit`); this module collects them. :data:`SCENARIOS` maps an algorithm's registry name to the builder of
its scenario; ``corrected=False`` tests the paper's claim, ``corrected=True`` dpkit's calibration.
"""

from __future__ import annotations

from typing import Any, Callable

from dpkit.algorithms.a_ddp.audit_instances import a_ddp_upload
from dpkit.algorithms.dp_admm.admm_pvp_audit_instances import admm_pvp_release
from dpkit.algorithms.substrate.audit_instance import AuditScenario
from dpkit.algorithms.dp_admm.audit_instances import dp_admm_release
from dpkit.algorithms.baselines.dp_logreg_audit import dp_logreg_gradients
from dpkit.algorithms.dvp_admm.audit_instances import dvp_admm_transcript
from dpkit.algorithms.hetero_admm.audit_instances import hetero_admm_transcript
from dpkit.algorithms.pp_admm.audit_instances import ipp_admm_svt, pp_admm_minimizer

__all__ = ["AuditScenario", "SCENARIOS", "make_scenario"]

SCENARIOS: dict[str, Callable[..., AuditScenario]] = {
    "pp-admm": pp_admm_minimizer,
    "ipp-admm": ipp_admm_svt,
    "dp-admm": dp_admm_release,
    "admm-pvp": admm_pvp_release,
    "hetero-admm": hetero_admm_transcript,
    "a-ddp": a_ddp_upload,
    "dvp-admm": dvp_admm_transcript,
    "dp-logreg": dp_logreg_gradients,
}
"""Algorithm name → scenario builder ``builder(*, corrected, **parameters) -> AuditScenario``."""


def make_scenario(algorithm: str, *, corrected: bool = False, **parameters: Any) -> AuditScenario:
    """The audit scenario of ``algorithm`` (see :data:`SCENARIOS`)."""
    if algorithm not in SCENARIOS:
        raise ValueError(f"algorithm must be one of {tuple(SCENARIOS)}, got algorithm={algorithm!r}")
    return SCENARIOS[algorithm](corrected=corrected, **parameters)
