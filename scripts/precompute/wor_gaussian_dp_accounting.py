"""dp_accounting's RDP of the Gaussian sampled without replacement, for tests/data/wor_gaussian_dp_accounting.json.

Run in a separate venv that has dp_accounting (it is not a test dependency of dpkit), from the
repository root:  python scripts/precompute/wor_gaussian_dp_accounting.py
It imports nothing from dpkit. Values: ``RdpAccountant(orders, NeighboringRelation.REPLACE_ONE)``
composed with ``SampledWithoutReplacementDpEvent(n, m, GaussianDpEvent(z))`` (``count`` times);
``rdp`` is the accountant's ``_rdp`` array at ``orders`` and ``epsilon`` its ``get_epsilon(delta)``.
"""

from __future__ import annotations

import json
import platform
import sys
from importlib import metadata
from pathlib import Path

import dp_accounting
import numpy as np
import scipy
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant as rdp

OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "wor_gaussian_dp_accounting.json"
ORDERS = [2, 2.5, 3, 4, 5, 7.5, 8, 12, 16, 32, 64, 100.5, 128, 200, 256]
CURVES = [(z, m, n) for z in (0.7, 1.0, 2.0, 5.0, 20.0) for m, n in ((1, 1000), (10, 1000), (100, 1000), (500, 1000))]
LEDGERS = [  # (z, m, n, count, delta)
    (1.0, 100, 10_000, 1000, 1e-5),
    (2.0, 100, 10_000, 10_000, 1e-5),
    (5.0, 100, 1000, 100, 1e-6),
    (0.8, 50, 1000, 500, 1e-5),
    (10.0, 1, 100, 5000, 1e-8),
]


def accountant(z: float, m: int, n: int, count: int, orders) -> rdp.RdpAccountant:
    acc = rdp.RdpAccountant(orders=list(orders), neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    return acc.compose(dp_event.SampledWithoutReplacementDpEvent(n, m, dp_event.GaussianDpEvent(z)), count)


def main() -> None:
    curves = [{"noise_multiplier": z, "sample_size": m, "population_size": n, "orders": ORDERS,
               "rdp": [float(v) for v in np.asarray(accountant(z, m, n, 1, ORDERS)._rdp)]} for z, m, n in CURVES]
    ledgers = []
    for z, m, n, count, delta in LEDGERS:
        acc = accountant(z, m, n, count, rdp.DEFAULT_RDP_ORDERS)
        ledgers.append({"noise_multiplier": z, "sample_size": m, "population_size": n, "count": count,
                        "delta": delta, "epsilon": float(acc.get_epsilon(delta))})
    data = {
        "description": "dp_accounting's RDP of the Gaussian mechanism on a subset drawn without replacement, "
                       "replace-one neighbours (its Gaussian-specific bound: Wang, Balle & Kasiviswanathan 2019, "
                       "arXiv 1808.00087, Thm 27 up to order 256, their Thm 9 above; fractional orders by linear "
                       "interpolation of (alpha - 1) * RDP between the neighbouring integers). 'curves': the RDP of "
                       "one event at 'orders'; 'ledgers': get_epsilon(delta) of 'count' events over "
                       "DEFAULT_RDP_ORDERS.",
        "provenance": {
            "package": "dp-accounting", "version": metadata.version("dp-accounting"),
            "module": "dp_accounting.rdp.rdp_privacy_accountant",
            "call": "RdpAccountant(orders, NeighboringRelation.REPLACE_ONE).compose(SampledWithoutReplacementDpEvent("
                    "population_size, sample_size, GaussianDpEvent(noise_multiplier)), count)",
            "script": "scripts/precompute/wor_gaussian_dp_accounting.py",
            "python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
            "installed_as": "pip install dp-accounting in a separate venv",
        },
        "curves": curves,
        "ledgers": ledgers,
    }
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
