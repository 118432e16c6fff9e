"""Heterogeneous-privacy distributed learning of Wang, Ishii, Du, Cheng & Chen (IEEE TSP 2020), seed 001.

Two phases (spec 001 §2):

1. **Label randomization** (users): each user flips its label with probability
   p = 1/(1 + e^ε) (binary randomized response, eqs. 12–13; per-user ε allowed) and sends
   (x, y') to its server. Features are sent in the clear.
2. **Perturbed ADMM** (servers, eqs. 14–17) over a connected graph: server i minimises the
   modified, unbiased loss (eq. 19) ℓ̃(y', z, ε) = [e^ε ℓ(y'z) − ℓ(−y'z)]/(e^ε − 1) plus
   (a/n)·½||w||², plus the bounded objective perturbation (1/n)η_iᵀw with ||η_i||_∞ ≤ R drawn once
   (uniform on [−R, R]^d: the paper gives no distribution), then publishes
   w̃_i(t) = w_i(t) + θ_i(t) with θ_i(t) ~ N(0, ρ^{t−1} V_i² I) (eq. 16); the dual step (17) uses
   the published w̃.

**Privacy** (spec 001 §3.5; the paper states no composed theorem). Labels: exactly ε-label-LDP
against every server (randomized once; post-processing covers Phase 2). Records against the
other servers: one step of server i has L2 sensitivity Δ_i = 2 c̃₂/(m_i μ_i) given the public
history, with c̃₂ = coth(ε/2) (modified-loss Lipschitz constant, c₂ = 1 for ‖x‖ ≤ 1) and
μ_i = a/n + 2βN_i, so the T published iterates are a composition of Gaussian mechanisms with
σ_t = ρ^{(t−1)/2} V_i: exactly μ-GDP with μ² = (Δ_i/V_i)² Σ_{t=1}^T ρ^{−(t−1)} (Dong, Roth & Su
2022, Cor. 3.3), reported as ε(δ) by the analytic Gaussian curve. η_i is treated as fixed (worst
case). The sum grows like ρ^{−T}: the decaying noise makes the guarantee diverge (spec flag 3.4.4),
which :func:`phase2_epsilon_curve` shows iteration by iteration.

Phase 1's randomized response and the modified loss are the shared ones of
:mod:`dpkit.mechanisms.randomized_response` (:func:`flip_probability`, :func:`binary_rr_epsilon`,
:func:`modified_logistic_loss`, :func:`modified_logistic_loss_derivative`, re-exported here);
:func:`randomize_labels` applies binary randomized response with one ε per record.

References
----------
.. [1] X. Wang, H. Ishii, L. Du, P. Cheng, J. Chen, "Privacy-preserving Distributed Machine
   Learning via Local Randomization and ADMM Perturbation", IEEE TSP 2020, arXiv:1908.01059,
   eqs. (12)–(19), Proposition 1, Proposition 2.
.. [2] N. Natarajan et al., "Learning with Noisy Labels", NeurIPS 2013, Lemma 1 (unbiased loss).
.. [3] J. Dong, A. Roth, W. Su, "Gaussian Differential Privacy", JRSS-B 2022, Cor. 3.3.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Sequence

import numpy as np
from scipy import special

from dpkit._validation import (
    check_integer,
    check_nonnegative,
    check_open_unit,
    check_positive,
    check_rng,
    check_unit_interval,
)
from dpkit.accounting.analytic_gaussian import gaussian_epsilon
from dpkit.accounting.base import AccountingResult
from dpkit.accounting.events import ComposedEvent, GaussianEvent, RandomizedResponseEvent
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.algorithms.dvp_admm import newton_batched
from dpkit.algorithms.losses import Logistic
from dpkit.mechanisms.randomized_response import (
    binary_rr_epsilon,
    flip_probability,
    modified_logistic_loss,
    modified_logistic_loss_derivative,
)

__all__ = [
    "flip_probability",
    "binary_rr_epsilon",
    "randomize_labels",
    "modified_logistic_loss",
    "modified_logistic_loss_derivative",
    "lipschitz_factor",
    "phase2_sensitivity",
    "phase2_mu",
    "phase2_epsilon_curve",
    "run_hetero_admm",
    "transcript",
    "train_hetero_admm",
]


# --------------------------------------------------------------------------- Phase 1


def randomize_labels(y: np.ndarray, epsilon: float | np.ndarray, rng: np.random.Generator | int | None = 0,
                     size: int | None = None) -> np.ndarray:
    """Binary randomized response on labels in {−1, +1}: flip each with probability 1/(1 + e^ε).

    ``epsilon`` is a number or one value per label (self-controlled ε, spec 001 §2.1); the flip
    probability is :func:`~dpkit.mechanisms.randomized_response.flip_probability`. For a scalar ε
    this is :class:`~dpkit.mechanisms.randomized_response.BinaryRandomizedResponse` (same draws
    from the same generator); per-record ε applies one such mechanism per record. With ``size``
    the output has a leading axis of ``size`` independent randomizations.
    """
    y = np.asarray(y, float)
    if not np.all(np.abs(y) == 1.0):
        raise ValueError("y must contain only -1 and +1")
    p = np.broadcast_to(flip_probability(epsilon), y.shape)
    gen = check_rng(rng)
    shape = y.shape if size is None else (check_integer("size", size, minimum=1),) + y.shape
    flip = gen.random(shape) < p
    return np.where(flip, -y, y)


# --------------------------------------------------------------------------- the modified loss's Lipschitz factor


def lipschitz_factor(epsilon: float) -> float:
    """(e^ε + 1)/(e^ε − 1) = coth(ε/2): the modified loss's gradient bound over the original's (eq. 21).

    >>> round(lipschitz_factor(0.4), 4)
    5.0665
    """
    epsilon = check_positive("epsilon", epsilon, allow_inf=True)
    return 1.0 / math.tanh(epsilon / 2.0)  # 1 at eps = inf (no label randomization)


# --------------------------------------------------------------------------- Phase-2 accounting


def phase2_sensitivity(epsilon: float, m: int, a: float, n: int, beta: float, degree: int, c2: float = 1.0) -> float:
    """Δ_i = 2 c̃₂/(m_i μ_i), μ_i = a/n + 2βN_i, c̃₂ = coth(ε/2)·c₂ (spec 001 §3.5; replace-one of a
    user's record (x, y') at server i, conditionally on the public history)."""
    mu = check_positive("a", a) / check_integer("n", n, minimum=1) + 2.0 * check_nonnegative("beta", beta) * check_integer(
        "degree", degree, minimum=0)
    return 2.0 * lipschitz_factor(epsilon) * check_positive("c2", c2) / (check_integer("m", m, minimum=1) * mu)


def phase2_mu(sensitivity: float, V: float, rho: float, iterations: int) -> float:
    """GDP μ of T published iterates: μ² = (Δ/V)² Σ_{t=1}^T ρ^{−(t−1)} = (Δ/V)² (ρ^{−T} − 1)/(ρ^{−1} − 1).

    Evaluated in log space; returns ``inf`` on overflow (the guarantee is then void).

    >>> [round(phase2_mu(1.0, 1.0, 0.8, T) ** 2, 2) for T in (10, 50)]   # spec 001 flag 3.4.4 sums
    [33.25, 280255.69]
    """
    sensitivity = check_positive("sensitivity", sensitivity)
    V = check_nonnegative("V", V)
    rho = check_unit_interval("rho", rho, include_zero=False)
    T = check_integer("iterations", iterations, minimum=0)
    if T == 0:
        return 0.0
    if V == 0.0:
        return math.inf
    if rho == 1.0:
        log_sum = math.log(T)
    else:
        # Σ_{k=0}^{T-1} ρ^{-k} = (ρ^{-T} − 1)/(ρ^{-1} − 1)
        x = -T * math.log(rho)
        log_sum = x + math.log(-math.expm1(-x)) - math.log(math.expm1(-math.log(rho)))
    log_mu = math.log(sensitivity / V) + 0.5 * log_sum
    return math.exp(log_mu) * (1.0 + 1e-12) if log_mu < 700 else math.inf


def phase2_epsilon_curve(sensitivity: float, V: float, rho: float, iterations: int, delta: float) -> list[float]:
    """ε(δ) of the first t published iterates, t = 1..T (exact Gaussian composition; ``inf`` once void).

    The growth is geometric in t (ρ < 1): the decaying noise variance makes the accountants diverge.
    """
    delta = check_open_unit("delta", delta)
    out = []
    for t in range(1, check_integer("iterations", iterations, minimum=1) + 1):
        mu = phase2_mu(sensitivity, V, rho, t)
        out.append(gaussian_epsilon(1.0, delta, mu) if math.isfinite(mu) and mu < 1e6 else math.inf)
    return out


# --------------------------------------------------------------------------- the algorithm (vectorised over runs)


def _stack(parts: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    Xs = [np.asarray(p.X if hasattr(p, "X") else p[0], float) for p in parts]
    ys = [np.asarray(p.y if hasattr(p, "y") else p[1], float) for p in parts]
    if len({x.shape for x in Xs}) != 1:
        raise ValueError("every server must hold the same number of records m with the same dimension d")
    X, y = np.stack(Xs), np.stack(ys)
    if not np.all(np.abs(y) == 1.0):
        raise ValueError("labels must be -1 or +1")
    return X, y


def run_hetero_admm(parts: Sequence[Any], adjacency: np.ndarray, *, epsilon: float | None, R: float, V: float | Sequence[float],
                    rho: float, a: float = 0.01, beta: float = 0.01, iterations: int = 100, n: int = 1,
                    rng: np.random.Generator | int | None = 0, tol: float = 1e-9,
                    callback: Callable[[int, np.ndarray, np.ndarray, np.ndarray], None] | None = None) -> dict[str, np.ndarray]:
    """Run the two-phase framework ``n`` times in parallel (eqs. 12–19).

    Parameters
    ----------
    parts
        Per server ``(X, y)`` with the true labels (equal sizes m; ‖x‖ ≤ 1).
    adjacency
        ``(n_servers, n_servers)`` symmetric 0/1 matrix of a connected graph.
    epsilon
        Label PPD ε (number or per-record array of shape ``(n_servers, m)``); ``None`` skips
        Phase 1 (true labels, the original logistic loss).
    R
        Objective-perturbation bound; η_i ~ Uniform[−R, R]^d, drawn once (R = 0: none).
    V, rho
        Primal noise θ_i(t) ~ N(0, ρ^{t−1} V_i² I) (V = 0: none).
    a, beta
        Regularization weight and ADMM penalty β.

    Returns
    -------
    dict with ``published`` (n, T, servers, d) — every w̃_i(t), what neighbours see;
    ``private`` (n, T, servers, d) — the exact w_i(t); ``average`` (n, servers, d) — w̄_i(T);
    ``labels`` (n, servers, m) — the randomized labels; ``gamma`` — final duals.
    """
    X, y = _stack(parts)
    N, m, d = X.shape
    A = np.asarray(adjacency, float)
    if A.shape != (N, N) or not np.array_equal(A, A.T) or np.any(np.diag(A)):
        raise ValueError(f"adjacency must be a symmetric ({N}, {N}) 0/1 matrix with empty diagonal")
    deg = A.sum(axis=1)
    R = check_nonnegative("R", R)
    rho = check_unit_interval("rho", rho, include_zero=False)
    a = check_positive("a", a)
    beta = check_positive("beta", beta)
    T = check_integer("iterations", iterations, minimum=1)
    n = check_integer("n", n, minimum=1)
    Vs = np.broadcast_to(np.asarray(V, float), (N,)).copy()
    if np.any(Vs < 0) or not np.all(np.isfinite(Vs)):
        raise ValueError(f"V must be >= 0 and finite, got V={V}")
    gen = check_rng(rng)
    if epsilon is None:
        labels = np.broadcast_to(y, (n, N, m)).copy()
        logistic = Logistic()

        def record_loss(z):
            return logistic.value(labels * z)

        def record_derivative(z):
            return labels * logistic.derivative(labels * z)
    else:
        eps = np.broadcast_to(np.asarray(epsilon, float), (N, m))
        flip_probability(eps)  # validates
        labels = randomize_labels(y, eps, gen, size=n)

        def record_loss(z):
            return modified_logistic_loss(z, labels, eps)

        def record_derivative(z):
            return modified_logistic_loss_derivative(z, labels, eps)
    eta = gen.uniform(-R, R, size=(n, N, d)) if R > 0 else np.zeros((n, N, d))

    def margins(w):
        return np.matmul(X, w[..., None])[..., 0]

    def loss_value(w):
        return record_loss(margins(w)).mean(axis=-1)

    def loss_grad(w):
        return np.matmul(record_derivative(margins(w))[..., None, :], X)[..., 0, :] / m

    def loss_hess(w):
        z = margins(w)
        s = special.expit(z) * special.expit(-z)
        return np.matmul(np.swapaxes(X * s[..., None], -1, -2), X) / m

    kappa = a / N + 2.0 * beta * deg  # (N,)
    eye = np.eye(d)
    w_pub = np.zeros((n, N, d))
    gamma = np.zeros((n, N, d))
    w_priv = np.zeros((n, N, d))
    pub = np.empty((n, T, N, d))
    priv = np.empty((n, T, N, d))
    w_sum = np.zeros((n, N, d))
    cache: dict[str, np.ndarray] = {}
    for t in range(T):
        anchors = deg[:, None] * w_pub + np.einsum("pq,nqd->npd", A, w_pub)  # Σ_l (w̃_i(t) + w̃_l(t))
        linear = eta / N + gamma - beta * anchors

        def value(w, linear=linear):
            return loss_value(w) + 0.5 * kappa * np.sum(w * w, axis=-1) + np.sum(linear * w, axis=-1)

        def grad(w, linear=linear):
            return loss_grad(w) + kappa[:, None] * w + linear

        def hess(w):
            return loss_hess(w) + kappa[:, None, None] * eye

        w_priv = newton_batched(value, grad, hess, w_priv, tol=tol, cache=cache)
        theta = gen.standard_normal((n, N, d)) * (Vs * rho ** (t / 2.0))[None, :, None]
        w_pub = w_priv + theta
        gamma = gamma + beta * (deg[:, None] * w_pub - np.einsum("pq,nqd->npd", A, w_pub))
        pub[:, t] = w_pub
        priv[:, t] = w_priv
        w_sum += w_priv
        if callback is not None:
            callback(t + 1, w_pub, w_sum / (t + 1), gamma)
    return {"published": pub, "private": priv, "average": w_sum / T, "labels": labels, "gamma": gamma}


def transcript(parts: Sequence[Any], n: int, rng: np.random.Generator | int | None = 0, *,
               adjacency: np.ndarray | None = None, epsilon: float | None = 1.0, R: float = 0.0, V: float = 1.0,
               rho: float = 0.8, a: float = 0.01, beta: float = 1.0, iterations: int = 10) -> np.ndarray:
    """What the other servers see in ``n`` independent runs: every published w̃_i(t), shape (n, T, servers, d).

    Includes Phase 1 (fresh label randomization in every run). Default graph: complete.
    """
    N = len(parts)
    if adjacency is None:
        adjacency = np.ones((N, N)) - np.eye(N)
    return run_hetero_admm(parts, adjacency, epsilon=epsilon, R=R, V=V, rho=rho, a=a, beta=beta,
                           iterations=iterations, n=n, rng=rng)["published"]


def train_hetero_admm(
    parts: Sequence[Any],
    graph: Any,
    *,
    epsilon: float | None,
    delta: float = 1e-5,
    R: float = 1.0,
    V: float | Sequence[float] = 0.1,
    rho: float = 0.8,
    a: float = 0.01,
    beta: float = 0.01,
    iterations: int = 100,
    test: Any = None,
    rng: np.random.Generator | int | None = 0,
    progress: Callable[[int, int], None] | None = None,
) -> Any:
    """Train with the two-phase framework and return a :class:`~dpkit.algorithms.result.TrainingResult`.

    ``epsilon`` is the label PPD (``None``: Phase 1 off). The output model is the agents' average of
    the running averages w̄_i(T) (the paper's output, §4.1). Guarantees: ``"paper"`` = ε-label-LDP
    (Proposition 1, the paper's only quantitative privacy claim; it computes no Phase-2 (ε_p, δ_p)),
    ``"corrected"`` = the record-level (x, y') guarantee against the other servers from the
    published iterates, by exact Gaussian composition (η ignored), at ``delta``. The history has an
    ``epsilon_phase2`` column: ε(δ) after t iterations.
    """
    from dpkit.algorithms.admm import finish
    from dpkit.algorithms.evaluation import Evaluator
    from dpkit.algorithms.losses import Logistic

    delta = check_open_unit("delta", delta)
    if epsilon is not None:
        epsilon = check_positive("epsilon", epsilon)
    parts = list(parts)
    N, m = len(parts), parts[0].n
    T = check_integer("iterations", iterations, minimum=1)
    Vs = np.broadcast_to(np.asarray(V, float), (N,))
    degrees = graph.degrees
    ev = Evaluator(Logistic(), parts, test, max(1, T // 50))
    ev.record(0, np.zeros((N, parts[0].d)))

    def callback(t, w_pub, w_avg, gamma):
        ev.record(t, w_avg[0], gamma[0], force=(t == T))
        if progress is not None:
            progress(t, T)

    start = time.perf_counter()
    out = run_hetero_admm(parts, graph.adjacency, epsilon=epsilon, R=R, V=V, rho=rho, a=a, beta=beta,
                          iterations=T, n=1, rng=rng, callback=callback)
    seconds = time.perf_counter() - start
    models = out["average"][0]
    relation = NeighbouringRelation.REPLACE_ONE
    eps_lab = epsilon if epsilon is not None else math.inf
    sens = [phase2_sensitivity(eps_lab, m, a, N, beta, int(degrees[i])) for i in range(N)]
    curves = [phase2_epsilon_curve(sens[i], float(Vs[i]), rho, T, delta) for i in range(N)]
    worst = max(range(N), key=lambda i: curves[i][-1])
    eps_phase2 = curves[worst][-1]
    it = ev.history["iteration"]
    ev.history["epsilon_phase2"] = [0.0 if t == 0 else curves[worst][t - 1] for t in it]
    label_note = (f"labels: exactly {eps_lab:g}-label-LDP against every server (randomized once)"
                  if epsilon is not None else "labels: no Phase-1 randomization")
    paper = None
    if epsilon is not None:
        paper = AccountingResult(
            epsilon=eps_lab, delta=0.0, accountant="randomized response", neighbouring=relation,
            method="seed 001 Proposition 1: epsilon-LDP of the label (Definition 1 flips only y)",
            is_upper_bound=True,
            notes=("label-only: features are sent in the clear to the collecting server",
                   "the paper computes no Phase-2 (eps_p, delta_p) for R, V, rho"))
    corrected = AccountingResult(
        epsilon=eps_phase2, delta=delta, accountant="gdp (exact Gaussian composition)", neighbouring=relation,
        method=(f"record (x, y') vs other servers: {T} Gaussian releases, sensitivity 2coth(eps/2)/(m(a/n+2beta N_i)), "
                "sigma_t = rho^((t-1)/2) V_i, eta treated as fixed (spec 001 §3.5)"),
        notes=(label_note, "grows like rho^(-T/2) in mu: diverges with the number of iterations (spec 001 flag 3.4.4)"))
    ledger = []
    for i in range(N):
        events = tuple(GaussianEvent(float(Vs[i]) * rho ** (t / 2.0), sens[i]) for t in range(T)) if Vs[i] > 0 else ()
        entries = ((RandomizedResponseEvent(eps_lab), 1),) if epsilon is not None else ()
        if events:
            entries += ((ComposedEvent(events), 1),)
        ledger.append(entries)
    config = {"iterations": T, "agents": N, "epsilon_label": epsilon, "delta": delta, "R": R,
              "V": Vs.tolist(), "rho": rho, "a": a, "beta": beta, "graph": graph.to_dict(),
              "flip_probability": flip_probability(eps_lab) if epsilon is not None else 0.0,
              "phase2_sensitivity": sens, "eta_distribution": "uniform[-R, R]^d (not given by the paper)"}
    return finish("hetero-admm", models, models.mean(axis=0), ev, test, ledger, {"paper": paper, "corrected": corrected},
                  seconds, config, (label_note,))


def registry_runner(parts, test, graph, *, epsilon, delta, iterations, rng, progress, **options):
    """``dpkit train --algorithm hetero-admm``: ``epsilon`` is the label ε; options R, V, rho, a, beta."""
    return train_hetero_admm(parts, graph, epsilon=epsilon, delta=delta, iterations=iterations, test=test, rng=rng,
                             progress=progress, **options)
