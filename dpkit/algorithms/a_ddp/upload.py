"""One A-DDP upload: a user samples one of its m records, clips its logistic gradient, adds Gaussian noise.

This is lines 11–14 of Algorithm 1 of Cheng, Liu, Wang & Lu (2020): at the broadcast model w,
user u draws J uniformly from its m records, computes g = ∇ℓ(w, x_J) = −y_J σ(−y_J wᵀx_J) x_J,
clips it to g / max(1, ||g||/C) and uploads g + N(0, σ² I). There is no secure aggregation: the
server sees every upload, so the privacy unit is one record of one user's local data.

Privacy event of one upload. Replacing one record of the user's data changes the clipped
gradient of that record by at most 2C in L2 (two vectors of norm ≤ C), and the record is the
one sampled with probability 1/m. The upload is therefore the Gaussian mechanism with
sensitivity 2C run on a uniformly random subset of size 1 drawn without replacement from m
records. As computed, a gradient clipped in doubles can have a norm slightly above C, so the
sensitivity is 2C' = 2C(1 + γ₅)/√(1 − γ_{d+1}) ≈ 2C(1 + 1.2·10⁻⁷) for d ≤ 2³¹
(:func:`~dpkit.mechanisms.float_sensitivity.clipped_norm_bound`; one record, no summation error):
:class:`~dpkit.accounting.events.SampledWithoutReplacementEvent` ``(GaussianEvent(σ, 2C'), 1, m)``
under replace-one (Wang, Balle & Kasiviswanathan 2019). The paper calibrates σ to sensitivity C
(Cheng et al. 2020, Alg. 1 line 14, ``noise(C, ·)``), half the true value; :class:`UserUpload`
always records the true event, whatever σ it is given.

:class:`UserUpload` is a :class:`~dpkit.mechanisms.base.Mechanism`: ``release`` draws one upload
(the noise by :class:`~dpkit.mechanisms.gaussian.GaussianMechanism`) and records the event in the
user's ledger entry in the same call. The training loop (:mod:`dpkit.algorithms.a_ddp.algorithm`) and the
audit scenario (:mod:`dpkit.algorithms.a_ddp.audit_instances`) both call it.

>>> import numpy as np
>>> from dpkit.mechanisms.ledger import PrivacyLedger
>>> X, y = np.array([[0.6, 0.0], [0.0, 0.8]]), np.array([1.0, -1.0])
>>> upload = UserUpload(sigma=2.0, clip=1.0, records=2)
>>> ledger = PrivacyLedger(agents=1)
>>> upload.release((X, y, np.zeros(2)), rng=0, ledger=ledger).shape
(2,)
>>> ledger.entries(0)[0][0].event
GaussianEvent(sigma=2.0, sensitivity=2.0000002384186804)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from scipy.special import expit

from dpkit._validation import check_integer, check_positive, check_rng
from dpkit.accounting.events import SampledWithoutReplacementEvent
from dpkit.mechanisms.base import Mechanism, check_size
from dpkit.mechanisms.float_sensitivity import DIMENSION_LIMIT, clipped_norm_bound
from dpkit.mechanisms.gaussian import GaussianMechanism

__all__ = ["clipped_gradients", "UserUpload"]


def clipped_gradients(w: np.ndarray, X: np.ndarray, y: np.ndarray, clip: float) -> np.ndarray:
    """Logistic-loss gradients −y σ(−y wᵀx) x of the rows of ``X``, each clipped to L2 norm ≤ ``clip``.

    Cheng et al. 2020, Alg. 1 lines 12–13: g / max(1, ||g||/C). Works on one record (``X`` of
    shape ``(d,)``, ``y`` a number) or a batch (``X`` of shape ``(k, d)``).

    >>> clipped_gradients(np.zeros(2), np.array([4.0, 0.0]), 1.0, 1.0)
    array([-1., -0.])
    """
    X = np.asarray(X, float)
    if X.ndim == 1:  # the training loop's path: scalar arithmetic, no small-array overhead
        y = float(y)
        coefficient = -y * float(expit(-y * float(X @ w)))
        norm = abs(coefficient) * math.sqrt(float(X @ X))
        if norm > clip:
            coefficient *= clip / norm
        return coefficient * X
    y = np.asarray(y, float)
    coefficient = -y * expit(-y * (X @ w))
    norm = np.abs(coefficient) * np.sqrt(np.einsum("ij,ij->i", X, X))
    return (coefficient / np.maximum(1.0, norm / clip))[:, None] * X


@dataclasses.dataclass(frozen=True)
class UserUpload(Mechanism):
    """One user's noisy clipped gradient of one uniformly sampled record (module docstring).

    Parameters
    ----------
    sigma
        Standard deviation σ of the Gaussian noise the user adds (per coordinate).
    clip
        Clipping norm C.
    records
        m, the number of records the user holds (one is sampled per upload).

    The input ``value`` of :meth:`sample` and :meth:`release` is ``(X, y, w)``: the user's
    records ``(m, d)``, their labels ``(m,)`` in {−1, +1} and the broadcast model ``(d,)``.
    """

    sigma: float
    clip: float
    records: int
    noise: GaussianMechanism = dataclasses.field(init=False, repr=False, compare=False)
    _event: SampledWithoutReplacementEvent = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        object.__setattr__(self, "clip", check_positive("clip", self.clip))
        object.__setattr__(self, "records", check_integer("records", self.records, minimum=1))
        # the clipped gradient's real norm, as computed (clipped_gradients: 5 roundings after the squared norm)
        noise = GaussianMechanism(sigma=self.sigma,
                                  sensitivity=2.0 * clipped_norm_bound(self.clip, DIMENSION_LIMIT, roundings=5))
        object.__setattr__(self, "noise", noise)
        object.__setattr__(self, "_event", SampledWithoutReplacementEvent(noise.event, 1, self.records))

    @property
    def floating_point_safe(self) -> bool:  # type: ignore[override]
        """Whether the upload's noise is float-safe (:attr:`noise`'s, the default)."""
        return self.noise.floating_point_safe

    @property
    def event(self) -> SampledWithoutReplacementEvent:
        """``SampledWithoutReplacementEvent(GaussianEvent(σ, 2C'), 1, m)`` (replace-one), C' ≥ C the
        largest real norm of a gradient clipped to C in doubles."""
        return self._event

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> np.ndarray:
        """One upload ``(d,)`` (``size=None``) or ``size`` independent uploads ``(size, d)`` for ``(X, y, w)``."""
        X, y, w = value
        if X.shape[0] != self.records or y.shape != (self.records,) or w.shape != X.shape[1:]:
            raise ValueError(f"value must be (X, y, w) with X of shape ({self.records}, d), y ({self.records},) "
                             f"and w (d,), got shapes {X.shape}, {y.shape}, {w.shape}")
        if X.shape[1] > DIMENSION_LIMIT:
            raise ValueError(f"the sensitivity covers at most {DIMENSION_LIMIT} coordinates, got d={X.shape[1]}")
        size = check_size(size)
        gen = check_rng(rng)
        rows = gen.integers(0, self.records, size=size)
        return self.noise.sample(clipped_gradients(w, X[rows], y[rows], self.clip), rng=gen)

    def sample_each(self, values: Any, rng: Any = None) -> np.ndarray:
        """One upload per user ``(k, d)`` for the users' stacked data ``(X, y, w)``, drawn at once.

        ``X`` is ``(k, m, d)`` (user i's records ``X[i]``), ``y`` is ``(k, m)`` and ``w`` the
        broadcast model ``(d,)``. Each user samples its own record and its own noise, independently:
        the same distribution as :meth:`sample` for each user in turn.
        """
        X, y, w = values
        if X.ndim != 3 or X.shape[1] != self.records or y.shape != X.shape[:2] or w.shape != X.shape[2:]:
            raise ValueError(f"values must be (X, y, w) with X of shape (k, {self.records}, d), y (k, {self.records}) "
                             f"and w (d,), got shapes {X.shape}, {y.shape}, {w.shape}")
        if X.shape[2] > DIMENSION_LIMIT:
            raise ValueError(f"the sensitivity covers at most {DIMENSION_LIMIT} coordinates, got d={X.shape[2]}")
        gen = check_rng(rng)
        users = np.arange(X.shape[0])
        rows = gen.integers(0, self.records, size=users.size)
        return self.noise.sample(clipped_gradients(w, X[users, rows], y[users, rows], self.clip), rng=gen)
