"""dpkit: differential-privacy accounting, mechanisms, private distributed learning and auditing.

Subpackages
-----------
accounting   events and accountants (zCDP, RDP, PLD, GDP, (ε, δ) composition), calibration
mechanisms   vectorised, seeded samplers that carry their privacy event
algorithms   the private distributed-learning algorithms of the seed papers
audit        empirical ε lower bounds and statistical tests of a claimed (ε, δ)
report       reproducibility reports from the JSON every command writes

The entry points below are importable from ``dpkit`` itself; importing ``dpkit`` does not
import :mod:`dpkit.algorithms` or the command line.

>>> import dpkit
>>> round(dpkit.RDPAccountant().compose(dpkit.GaussianMechanism(sigma=2.0).event, 10).get_epsilon(1e-5).epsilon, 3)
8.078
"""

__version__ = "0.1.0"

import sys  # noqa: E402
import types  # noqa: E402

_LAZY = {"PLDAccountant": "dpkit.accounting", "RDPAccountant": "dpkit.accounting", "calibrate": "dpkit.accounting",
         "audit": "dpkit.audit", "GaussianMechanism": "dpkit.mechanisms"}
"""Where each entry point lives; imported on first use (PEP 562), so that ``import dpkit`` (and the
command line's start-up) does not pay for scipy.stats, the PLD or the audit."""


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'dpkit' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_LAZY[name]), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


class _Package(types.ModuleType):
    """``dpkit.audit`` is the function :func:`dpkit.audit.audit`, also after the subpackage of
    that name is imported (the import system then sets the attribute to the subpackage)."""

    @property
    def audit(self) -> object:
        from dpkit.audit import audit

        return audit

    @audit.setter
    def audit(self, value: object) -> None:  # the import system binding the subpackage: the function stays
        pass


sys.modules[__name__].__class__ = _Package


__all__ = ["GaussianMechanism", "PLDAccountant", "RDPAccountant", "audit", "calibrate"]
