"""``dpkit dpsgd``: the DP-SGD privacy statement (what TF Privacy's ``compute_dp_sgd_privacy_statement`` answers).

DP-SGD over N examples with batches of B for E epochs at noise multiplier z (noise std / clip
norm) under add-or-remove-one-example neighbours. Reported (as in TF Privacy's statement):

- **Poisson sampling** (each example in each step independently with q = B/N, T = ⌈E·N/B⌉
  steps; Abadi et al. 2016, Mironov, Talwar & Zhang 2019): ε under RDP and dpkit's certified
  PLD interval. These are proven upper bounds when the batches *are* Poisson-sampled.
- **Fixed-size shuffled batches**: the number most papers report is the Poisson number above.
  It *assumes* shuffled fixed-size batches are as private as Poisson sampling at q = B/N, which
  is not a proven bound (TF Privacy's statement has the same caveat; shuffling can be less
  private, Chua et al. 2024 "How private are DP-SGD implementations?"). The proven bound for
  any data order, "each example once per epoch" (⌈E⌉ Gaussian releases, no amplification), is
  reported next to it.
- ``--microbatching``: microbatches of more than one example double the sensitivity under
  add-or-remove (Ponomareva et al. 2023, "How to DP-fy ML", §5.6): the accounted noise
  multiplier is z/2, as TF Privacy does.
- ``--max-examples-per-user K``: user-level DP by group privacy (Vadhan 2017, "The complexity
  of differential privacy", Lemma 2.2, with the tighter δ of its proof as TF Privacy uses it):
  an (ε, δ)-DP example-level guarantee gives (Kε, δ(e^{Kε} − 1)/(e^ε − 1)) for K examples.
  The example-level δ is searched (in log space) so that the user-level δ is at most
  ``--delta``; the reported δ is the certified one. Under RDP (Poisson) and the exact Gaussian
  (once per epoch), as TF Privacy, which offers no user-level PLD statement either.

``--batching`` says how the batches are formed, and adds its certified statement:

- ``poisson`` (default): the statement above.
- ``random-allocation`` ("balls and bins": each example in one uniformly random step of each epoch,
  t = ⌈N/B⌉ steps per epoch, ⌈E⌉ epochs; Feldman & Shenfeld 2025, Chua et al. 2025): ε under RDP
  and dpkit's certified PLD interval. This is the fixed-epoch batching scheme with a tight proven
  guarantee, and it is *more* private than the Poisson number at the same noise.
  ``dpkit.interop.batching`` has the matching PyTorch batch sampler.
- ``shuffle`` (a permutation per epoch, fixed-size batches): the certified *lower* bound of Chua et
  al. 2024 (ICML, "How private are DP-SGD implementations?") beside the proven upper bound for any
  order, so the true range of a shuffled run is visible; where the lower bound exceeds the Poisson
  number, that number is not a guarantee for the run.

With ``--epsilon``, the noise multiplier z to configure instead, under RDP and PLD: the smallest z
(within ``--rtol``, never below) whose ε meets the target, re-checked, for the chosen batching
(shuffling: against the proven any-order bound, the only upper bound there is).

Examples::

    dpkit dpsgd --examples 60000 --batch 256 --epochs 60 --noise-multiplier 1.1 --delta 1e-5
    dpkit dpsgd --examples 60000 --batch 256 --epochs 60 --epsilon 3 --delta 1e-5 --json
    dpkit dpsgd --examples 10000 --batch 100 --epochs 1 --noise-multiplier 1 --delta 1e-5 --batching random-allocation
"""

from __future__ import annotations

import argparse
import math
from typing import Any, Callable

from dpkit.accounting.base import Accountant
from dpkit.accounting.calibration import accountant_factory, calibrate
from dpkit.accounting.events import (
    GaussianEvent,
    PoissonSampledEvent,
    PrivacyEvent,
    RandomAllocationEvent,
    SelfComposedEvent,
)
from dpkit.accounting.pld import PLDAccountant
from dpkit.accounting.shuffled_batches import shuffled_epsilon_lower
from dpkit.commands import _accounting_args as common

ACCOUNTANTS = ("rdp", "pld")
BATCHINGS = ("poisson", "random-allocation", "shuffle")
#: Loss spacing of the PLD while calibrating random allocation (each trial then takes about a second); the
#: calibrated multiplier is re-checked by the default PLD accountant.
CALIBRATION_SPACING = 2e-3


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dpsgd",
        help="DP-SGD privacy statement: epsilon of a training run, or the noise multiplier for a target",
        description="The (epsilon, delta) of DP-SGD over --examples with --batch for --epochs (add-or-remove-one "
                    "example), under Poisson sampling and for shuffled fixed-size batches.",
    )
    parser.add_argument("--examples", type=int, required=True, help="number of training examples N")
    parser.add_argument("--batch", type=int, required=True, help="examples per batch B (sampling rate B/N)")
    parser.add_argument("--epochs", type=float, required=True, help="number of epochs E (may be fractional)")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--noise-multiplier", type=float, help="noise std / clipping norm: report epsilon")
    target.add_argument("--epsilon", type=float, help="target epsilon: report the noise multiplier")
    parser.add_argument("--delta", type=float, required=True, help="target delta in (0, 1)")
    parser.add_argument("--max-examples-per-user", type=int, default=None,
                        help="at most K examples per user: add a user-level guarantee (group privacy)")
    parser.add_argument("--microbatching", action="store_true",
                        help="microbatches of more than one example were used (doubles the sensitivity)")
    parser.add_argument("--batching", choices=BATCHINGS, default="poisson",
                        help="how batches are formed: poisson (default), random-allocation (each example in one random "
                             "step per epoch) or shuffle (a permutation per epoch, fixed-size batches)")
    parser.add_argument("--rtol", type=float, default=1e-4, help="relative width of the calibrated noise (default 1e-4)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def _check(args: argparse.Namespace) -> None:
    common.check_numbers(args)
    for name in ("examples", "batch"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name} must be an integer >= 1, got {getattr(args, name)}")
    if args.batch > args.examples:
        raise ValueError(f"--batch must be at most --examples={args.examples}, got {args.batch}")
    if not (args.epochs > 0 and math.isfinite(args.epochs)):
        raise ValueError(f"--epochs must be in (0, inf), got {args.epochs}")
    if not args.epochs * args.examples / args.batch <= common.MAX_COUNT:
        raise ValueError(f"--epochs x --examples / --batch (the number of steps) must be at most 2**63 - 1, got "
                         f"{args.epochs:g} x {args.examples} / {args.batch}")
    if not 0 < args.delta < 1:
        raise ValueError(f"--delta must be in (0, 1), got {args.delta}")
    if args.noise_multiplier is not None and not (0 < args.noise_multiplier < math.inf):
        raise ValueError(f"--noise-multiplier must be in (0, inf), got {args.noise_multiplier}")
    if args.epsilon is not None and not (0 < args.epsilon < math.inf):
        raise ValueError(f"--epsilon must be in (0, inf), got {args.epsilon}")
    if args.max_examples_per_user is not None and args.max_examples_per_user < 1:
        raise ValueError(f"--max-examples-per-user must be an integer >= 1, got {args.max_examples_per_user}")
    if not 0 < args.rtol < 1:
        raise ValueError(f"--rtol must be in (0, 1), got {args.rtol}")


def poisson_event(rate: float, noise_multiplier: float, steps: int) -> PrivacyEvent:
    """T Poisson-subsampled Gaussian steps: DP-SGD's event."""
    return SelfComposedEvent(PoissonSampledEvent(GaussianEvent(sigma=noise_multiplier), rate=rate), steps)


def once_per_epoch_event(noise_multiplier: float, epochs: float) -> PrivacyEvent:
    """⌈E⌉ Gaussian releases: each example in one batch per epoch, any order, no amplification."""
    return SelfComposedEvent(GaussianEvent(sigma=noise_multiplier), math.ceil(epochs))


def random_allocation_event(steps_per_epoch: int, noise_multiplier: float, epochs: float) -> PrivacyEvent:
    """⌈E⌉ epochs of random allocation: each example in one uniformly random step of each epoch (a
    fractional last epoch is accounted as a whole one, which only adds privacy loss)."""
    return SelfComposedEvent(RandomAllocationEvent(GaussianEvent(sigma=noise_multiplier), steps_per_epoch),
                             math.ceil(epochs))


def steps_per_epoch(examples: int, batch: int) -> int:
    """t = ⌈N/B⌉ steps per epoch: batches of B examples on average."""
    return -(-examples // batch)


def _log_expm1(x: float) -> float:
    """log(e^x − 1) for x > 0 without overflow."""
    return x + math.log(-math.expm1(-x)) if x > 1.0 else math.log(math.expm1(x))


def group_epsilon(epsilon_at: Callable[[float], float], user_delta: float, k: int) -> tuple[float, float]:
    """(K·ε, δ_user) for a group of K examples (Vadhan 2017, Lemma 2.2 and the last line of its
    proof): an (ε, δ)-DP example-level guarantee gives (Kε, δ(e^{Kε} − 1)/(e^ε − 1))-DP.

    ``epsilon_at(δ)`` is the example-level ε upper bound at δ. The example-level δ is searched in
    log space, keeping only values whose user-level δ is at most ``user_delta``, so the returned
    pair is a valid guarantee whatever the search does. Returns (inf, user_delta) when none is found.
    """
    if k == 1:
        return epsilon_at(user_delta), user_delta
    target = math.log(user_delta)

    def user_log_delta(log_delta: float) -> float:
        eps = epsilon_at(math.exp(log_delta))
        if not math.isfinite(eps):
            return math.inf
        return log_delta + _log_expm1(k * eps) - _log_expm1(eps) if eps > 0 else log_delta + math.log(k)

    high = target  # user δ ≥ δ·k > target here: infeasible
    low = target - math.log(10.0)
    while user_log_delta(low) > target:
        high, low = low, low - math.log(10.0)
        if low < math.log(1e-300):
            return math.inf, user_delta
    for _ in range(30):
        middle = 0.5 * (low + high)
        if user_log_delta(middle) <= target:
            low = middle
        else:
            high = middle
    eps = epsilon_at(math.exp(low))
    certified = math.exp(user_log_delta(low))
    return k * eps, min(certified, user_delta)


def _accountant(name: str, event: PrivacyEvent) -> Accountant:
    return accountant_factory(name, "add-remove")().compose(event)


def _statement(args: argparse.Namespace, z: float) -> dict[str, Any]:
    rate, steps = args.batch / args.examples, math.ceil(args.epochs * args.examples / args.batch)
    accounted = z / 2 if args.microbatching else z
    poisson = {name: _accountant(name, poisson_event(rate, accounted, steps)) for name in ACCOUNTANTS}
    rdp = poisson["rdp"].get_epsilon(args.delta)
    pld = poisson["pld"].get_epsilon(args.delta)
    once = _accountant("analytic", once_per_epoch_event(accounted, args.epochs)).get_epsilon(args.delta)
    out: dict[str, Any] = {
        "sampling_rate": rate, "steps": steps, "accounted_noise_multiplier": accounted,
        "poisson": {"rdp": rdp.to_dict(), "pld": pld.to_dict(),
                    "epsilon_rdp": rdp.epsilon, "epsilon_pld": pld.epsilon, "epsilon_pld_lower": pld.epsilon_lower},
        "shuffled": {
            "epsilon_reported_in_papers": min(rdp.epsilon, pld.epsilon),
            "assumption": "shuffled fixed-size batches are accounted as Poisson sampling at rate batch/examples; "
                          "not a proven bound for shuffling",
            "epsilon_once_per_epoch": once.epsilon,
            "once_per_epoch": "proven for any data order: each example in one batch per epoch, no amplification "
                              f"({math.ceil(args.epochs)} Gaussian releases)",
        },
    }
    per_epoch = steps_per_epoch(args.examples, args.batch)
    if args.batching == "random-allocation":
        event = random_allocation_event(per_epoch, accounted, args.epochs)
        ra_rdp = _accountant("rdp", event).get_epsilon(args.delta)
        ra_pld = _accountant("pld", event).get_epsilon(args.delta)
        out["random_allocation"] = {
            "steps_per_epoch": per_epoch, "epochs_accounted": math.ceil(args.epochs),
            "rdp": ra_rdp.to_dict(), "pld": ra_pld.to_dict(), "epsilon_rdp": ra_rdp.epsilon,
            "epsilon_pld": ra_pld.epsilon, "epsilon_pld_lower": ra_pld.epsilon_lower,
            "method": "random allocation (Feldman & Shenfeld 2025): each example in 1 of "
                      f"{per_epoch} steps per epoch, {math.ceil(args.epochs)} epochs",
        }
    if args.batching == "shuffle":
        # a lower bound may count only the epochs that certainly ran in full
        full_epochs = math.floor(args.epochs)
        out["shuffled"]["epsilon_lower"] = (shuffled_epsilon_lower(accounted, per_epoch, full_epochs, args.delta)
                                            if full_epochs >= 1 else 0.0)
        out["shuffled"]["lower"] = ("certified lower bound (Chua et al. 2024): epsilon of a pair of outputs that "
                                    f"neighbouring data sets attain under shuffling, over {full_epochs} full epochs")
    if args.max_examples_per_user is not None:
        k = args.max_examples_per_user
        user = {}
        # RDP only, as TF Privacy: the search evaluates ε at ~40 values of δ, cheap under RDP.
        user["epsilon_rdp"], user["delta_rdp"] = group_epsilon(
            lambda d: poisson["rdp"].get_epsilon(d).epsilon, args.delta, k)
        once_acc = _accountant("analytic", once_per_epoch_event(accounted, args.epochs))
        user["epsilon_once_per_epoch"], user["delta_once_per_epoch"] = group_epsilon(
            lambda d: once_acc.get_epsilon(d).epsilon, args.delta, k)
        user["method"] = "group privacy (Vadhan 2017, Lemma 2.2) over max_examples_per_user examples"
        out["user_level"] = user
    return out


def _calibration_plan(args: argparse.Namespace) -> tuple[Callable[[float], PrivacyEvent], dict[str, Any]]:
    """(event of a noise multiplier, accountant name or factory per accountant label) for ``--batching``."""
    rate, steps = args.batch / args.examples, math.ceil(args.epochs * args.examples / args.batch)
    if args.batching == "random-allocation":
        per_epoch = steps_per_epoch(args.examples, args.batch)
        fast_pld = lambda: PLDAccountant("add-remove", value_discretization_interval=CALIBRATION_SPACING)  # noqa: E731
        return (lambda z: random_allocation_event(per_epoch, z, args.epochs)), {"rdp": "rdp", "pld": fast_pld}
    if args.batching == "shuffle":  # the proven any-order bound is the only upper bound for shuffling
        return (lambda z: once_per_epoch_event(z, args.epochs)), {"analytic": "analytic"}
    return (lambda z: poisson_event(rate, z, steps)), {"rdp": "rdp", "pld": "pld"}


def _calibration(args: argparse.Namespace) -> dict[str, Any]:
    if args.max_examples_per_user is not None:
        raise ValueError("--max-examples-per-user applies with --noise-multiplier only (calibration is example-level)")
    rate, steps = args.batch / args.examples, math.ceil(args.epochs * args.examples / args.batch)
    factor = 2.0 if args.microbatching else 1.0
    out: dict[str, Any] = {"sampling_rate": rate, "steps": steps, "target_epsilon": args.epsilon,
                           "batching": args.batching}
    make_event, accountants = _calibration_plan(args)
    bracket: dict[str, float] = {"lower": 0.5, "upper": 2.0}
    for name, accountant in accountants.items():  # rdp first: its σ brackets the tighter, costlier PLD from above
        result = calibrate(make_event, accountant, target_epsilon=args.epsilon, target_delta=args.delta,
                           rtol=args.rtol, neighbouring="add-remove", **bracket)
        sigma = float(result.parameter)
        bracket = {"lower": 0.8 * sigma, "upper": sigma}
        check = _accountant(name, make_event(sigma)).get_epsilon(args.delta).epsilon
        if not check <= args.epsilon:  # calibration guarantees it; refuse rather than under-noise
            raise ArithmeticError(f"calibrated noise multiplier {sigma} misses --epsilon {args.epsilon} under {name}")
        out[name] = {"noise_multiplier": sigma * factor, "accounted_noise_multiplier": sigma, "epsilon": check,
                     "unsafe_noise_multiplier": None if result.unsafe_parameter is None
                     else float(result.unsafe_parameter) * factor}
    out["accountants"] = list(accountants)
    out["noise_multiplier"] = min(out[name]["noise_multiplier"] for name in accountants)
    return out


_CALIBRATION_SCHEME = {
    "poisson": "with Poisson sampling at q = {q:.6g} over {steps} steps",
    "random-allocation": "with random allocation (each example in 1 of {per_epoch} steps per epoch, {epochs} epochs)",
    "shuffle": "with shuffled fixed-size batches, against the proven bound for any order ({epochs} Gaussian "
               "releases: shuffling has no proven amplification)",
}


def _statement_lines(args: argparse.Namespace, out: dict[str, Any]) -> list[str]:
    p, s = out["poisson"], out["shuffled"]
    lines = [f"Poisson sampling (q = {out['sampling_rate']:.6g}, {out['steps']} steps):",
             f"  RDP: epsilon <= {common.fmt_up(p['epsilon_rdp'])}",
             f"  PLD: epsilon in [{common.fmt_down(p['epsilon_pld_lower'])}, {common.fmt_up(p['epsilon_pld'])}] "
             "(certified)"]
    if "random_allocation" in out:
        r = out["random_allocation"]
        lines += [f"Random allocation (each example in 1 of {r['steps_per_epoch']} steps per epoch, "
                  f"{r['epochs_accounted']} epochs):",
                  f"  RDP: epsilon <= {common.fmt_up(r['epsilon_rdp'])}",
                  f"  PLD: epsilon in [{common.fmt_down(r['epsilon_pld_lower'])}, {common.fmt_up(r['epsilon_pld'])}] "
                  "(certified)",
                  "  random allocation is the fixed-epoch batching with a tight proven guarantee "
                  "(dpkit.interop.batching has its PyTorch sampler)"]
    lines += ["Shuffled fixed-size batches:"]
    if "epsilon_lower" in s:
        lines.append(f"  epsilon >= {common.fmt_down(s['epsilon_lower'])} certified lower bound (Chua et al. 2024: "
                     "neighbouring data sets that reach it exist)")
    lines += [f"  epsilon {common.fmt_up(s['epsilon_reported_in_papers'])} as most papers report it: assumes "
              "shuffling is as private as Poisson sampling (not a proven bound"
              + ("; refuted by the lower bound above)" if s.get("epsilon_lower", 0.0) > s["epsilon_reported_in_papers"]
                 else ")"),
              f"  epsilon <= {common.fmt_up(s['epsilon_once_per_epoch'])} proven for any order (each example once "
              "per epoch, no amplification)"]
    if args.batching == "shuffle":
        lines.append("  for a tight guarantee with fixed epochs, use random allocation (--batching random-allocation)")
    return lines


def run(args: argparse.Namespace) -> int:
    _check(args)
    with common.quiet_float_warnings():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    header = (f"DP-SGD over {args.examples} examples, {args.batch} per batch, {args.epochs:g} epochs"
              f"{', with microbatching' if args.microbatching else ''}; add-or-remove-one example; "
              f"delta = {args.delta:g}")
    context = {"examples": args.examples, "batch": args.batch, "epochs": args.epochs, "delta": args.delta,
               "microbatching": args.microbatching, "max_examples_per_user": args.max_examples_per_user,
               "batching": args.batching}
    if args.epsilon is not None:
        out = _calibration(args)
        scheme = _CALIBRATION_SCHEME[args.batching].format(
            q=out["sampling_rate"], steps=out["steps"], per_epoch=steps_per_epoch(args.examples, args.batch),
            epochs=math.ceil(args.epochs))
        lines = [header, f"noise multiplier for epsilon <= {args.epsilon:g} {scheme}:"]
        for name in out["accountants"]:
            lines.append(f"  {name:>3}: noise multiplier {common.fmt_up(out[name]['noise_multiplier'])} "
                         f"(epsilon {common.fmt_up(out[name]['epsilon'])})")
        if args.batching == "poisson":
            lines.append("  shuffled fixed-size batches: papers use the same noise multiplier, assuming shuffling is "
                         "as private as Poisson sampling (not a proven bound)")
        common.emit({**context, **out}, "\n".join(lines), args.json)
        return 0
    out = _statement(args, args.noise_multiplier)
    lines = [header + f"; noise multiplier {args.noise_multiplier:g}", *_statement_lines(args, out)]
    if "user_level" in out:
        u = out["user_level"]
        lines += [f"User level, at most {args.max_examples_per_user} examples per user (group privacy):",
                  f"  Poisson, RDP: epsilon <= {common.fmt_up(u['epsilon_rdp'])}",
                  f"  once per epoch: epsilon <= {common.fmt_up(u['epsilon_once_per_epoch'])}"]
    common.emit({**context, "noise_multiplier": args.noise_multiplier, **out},
                "\n".join(lines), args.json)
    return 0
