"""Audit scenario of A-DDP (Cheng et al. 2020): one user's upload, σ for sensitivity C claimed, 2C true.

The mechanism is the real upload of the training loop,
:class:`~dpkit.algorithms.a_ddp.upload.UserUpload`, at the broadcast model w = 0. The user holds
one record (m = 1, so the one-record sampler always picks it; sampling would only add
amplification, which a single upload's claim does not use). D = {(4C e₁, +1)} and
D′ = {(4C e₁, −1)}: at w = 0 the clipped gradients are ∓C e₁, 2C apart, the largest
replace-one change.

* ``corrected=False``: σ as Algorithm 1 line 14 sizes one upload, the analytic Gaussian σ for
  (ε, δ) at sensitivity C (:func:`~dpkit.accounting.analytic_gaussian.gaussian_sigma`; C = 3,
  the paper's). The true ε at δ is the analytic Gaussian ε at 2C (2.155 for (1, 1e-5)):
  a violation.
* ``corrected=True``: σ from :func:`~dpkit.algorithms.a_ddp.plan.corrected_plan` for a one-round
  run of this user (C = 1/2, the corrected default): no violation.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dpkit._validation import check_open_unit, check_positive
from dpkit.accounting.analytic_gaussian import gaussian_epsilon, gaussian_sigma
from dpkit.algorithms.a_ddp.claims import PAPER_CLIP
from dpkit.algorithms.a_ddp.plan import CLIP, corrected_plan
from dpkit.algorithms.a_ddp.upload import UserUpload
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.audit_instance import AuditScenario

__all__ = ["UploadAtZero", "a_ddp_upload"]


@dataclasses.dataclass(frozen=True)
class UploadAtZero:
    """Picklable ``f(database, n, rng)``: n independent :class:`UserUpload` draws at w = 0.

    ``database`` is the user's records as an ``(m, d + 1)`` array ``[x, y]``.
    """

    upload: UserUpload

    def __call__(self, database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        data = np.asarray(database, float)
        X, y = data[:, :-1], data[:, -1]
        return self.upload.sample((X, y, np.zeros(X.shape[1])), size=n, rng=rng)


def a_ddp_upload(*, corrected: bool = False, epsilon: float = 1.0, delta: float = 1e-5,
                 clip: float | None = None) -> AuditScenario:
    """One A-DDP upload against its claimed (ε, δ) (module docstring)."""
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    clip = check_positive("clip", (CLIP if corrected else PAPER_CLIP) if clip is None else clip)
    if corrected:
        sigma = corrected_plan(Budget(epsilon, delta), [1], 1, rounds=1, clip=clip).sigma
        claimed = f"sigma calibrated by corrected_plan for one upload (sensitivity 2C, C={clip:g})"
    else:
        sigma = float(gaussian_sigma(epsilon, delta, clip))
        claimed = f"analytic-Gaussian sigma at sensitivity C (C={clip:g}), Cheng et al. 2020 Alg. 1 line 14"
    upload = UserUpload(sigma, clip, 1)
    true_eps = float(gaussian_epsilon(sigma, delta, 2.0 * clip))
    return AuditScenario(
        name="a-ddp-upload", paper="Cheng et al. 2020", samples=2_000_000,
        claim=f"one upload with {claimed} is ({epsilon}, {delta})-DP",
        claimed_epsilon=epsilon, claimed_delta=delta, mechanism=UploadAtZero(upload),
        pairs=[(np.array([[4.0 * clip, 1.0]]), np.array([[4.0 * clip, -1.0]]))], true_epsilon=true_eps,
        true_epsilon_note="exact: analytic Gaussian epsilon(delta) at the true sensitivity 2C",
        expect_violation=not corrected,
        prediction=("no violation: sigma calibrated to 2C" if corrected else
                    f"violation: true epsilon {true_eps:.3f} at delta={delta}"),
        corrected=corrected, parameters={"sigma": sigma, "clip": clip, "records_per_user": 1},
    )
