"""Floating point as executed for dpkit's ``GaussianMechanism``: a white-box reachability check
(the model is :mod:`dpkit.audit.ziggurat`).

:func:`dpkit.audit.float_events.find_float_witness` skips the Gaussian mechanism: numpy's
``normal`` is a ziggurat sampler, not a monotone function of one uniform. This script analyses
it with knowledge of that sampler instead (numpy ``random_standard_normal``, Marsaglia & Tsang
2000 layout): every output is either ``±fl(r·w_i)`` for a layer ``i ∈ [0, 256)`` and an
integer ``0 ≤ r < 2⁵²`` (fast path and wedge), or a tail value ``|x| > R = 3.6541528853610088``.
The 256 widths ``w_i`` are read from numpy itself through a generator with crafted words
(:func:`dpkit.audit.float_events.crafted_generator`: ``r = 1`` gives ``w_i``, ``r = 2``
checks ``2·w_i``). ``GaussianMechanism.sample`` computes ``y = fl(c + fl(0 + fl(σ·x)))``.

For an output ``y`` of one input, ``y`` is *unreachable* on centre ``c′`` when no layer, sign
and ``r`` (a binary search per layer and sign: the map ``r ↦ y`` is monotone) gives ``y``,
and ``|y − c′| < σR`` (not a possible tail value). The set of (layer, sign, r) searched
contains every fast-path and wedge output, so "unreachable" holds under the stated model of
numpy's sampler. The model is checked: every output drawn as executed must be found reachable
on its own centre (``self-unreachable`` must be 0).

    python experiments/float_gaussian.py [--samples 2000]

Measured (numpy 2.4, σ = 0.373 for (1, 10⁻⁵)-DP at sensitivity 0.1, centres 0.5 and 0.6,
2 000 outputs per input): about 10 % of the outputs on 0.5 and 4 % of those on 0.6 cannot
occur on the other centre. As executed, the Gaussian mechanism is therefore not (ε, δ)-DP for
any useful (ε, δ).
"""

from __future__ import annotations

import argparse

import numpy as np

from dpkit.audit.ziggurat import layer_widths, unreachable
from dpkit.mechanisms.gaussian import GaussianMechanism

def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000, help="outputs per input")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    mechanism = GaussianMechanism.from_epsilon_delta(1.0, 1e-5, sensitivity=0.1)
    widths = layer_widths()
    rng = np.random.default_rng(args.seed)
    centres = (0.5, 0.6)  # the means of two neighbouring datasets of 10 records in [0, 1]
    print(f"GaussianMechanism sigma={mechanism.sigma:.6g}, centres {centres}, {args.samples} outputs per input")
    for own, other in (centres, centres[::-1]):
        y = np.asarray(mechanism.sample(own, size=args.samples, rng=rng), dtype=float)
        own_bad = unreachable(y, own, mechanism.sigma, widths)
        other_bad = unreachable(y, other, mechanism.sigma, widths)
        print(f"outputs on {own}: self-unreachable {own_bad.mean():.4f} (must be 0), "
              f"unreachable on {other}: {other_bad.mean():.4f}")


if __name__ == "__main__":
    main()
