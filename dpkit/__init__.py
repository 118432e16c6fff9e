"""dpkit: differential-privacy accounting, mechanisms, private distributed learning and auditing.

Subpackages
-----------
accounting   events and accountants (zCDP, RDP, PLD, GDP, (ε, δ) composition), calibration
mechanisms   vectorised, seeded samplers that carry their privacy event
algorithms   the private distributed-learning algorithms of the seed papers
audit        empirical ε lower bounds and statistical tests of a claimed (ε, δ)
report       reproducibility reports from the JSON every command writes

The entry points below are importable from ``dpkit`` itself; ``dpkit.audit`` is the auditing
subpackage (its entry point is :func:`dpkit.audit.audit`). Importing ``dpkit`` does not import
:mod:`dpkit.algorithms` or the command line.

>>> import dpkit
>>> round(dpkit.RDPAccountant().compose(dpkit.GaussianMechanism(sigma=2.0).event, 10).get_epsilon(1e-5).epsilon, 3)
8.078
>>> dpkit.audit.AuditResult.__module__
'dpkit.audit.result'
"""

__version__ = "0.1.0"

_LAZY = {"PLDAccountant": "dpkit.accounting", "RDPAccountant": "dpkit.accounting", "calibrate": "dpkit.accounting",
         "GaussianMechanism": "dpkit.mechanisms"}
"""Where each entry point lives; imported on first use (PEP 562), so that ``import dpkit`` (and the
command line's start-up) does not pay for scipy.stats, the PLD or the audit."""


def __getattr__(name: str) -> object:
    import importlib

    if name in _SUBPACKAGES:  # ``dpkit.audit`` is the subpackage (its entry point is dpkit.audit.audit)
        return importlib.import_module(f"dpkit.{name}")
    if name not in _LAZY:
        raise AttributeError(f"module 'dpkit' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)


_SUBPACKAGES = ("accounting", "mechanisms", "algorithms", "audit", "interop", "commands", "report")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_SUBPACKAGES})


__all__ = ["GaussianMechanism", "PLDAccountant", "RDPAccountant", "calibrate"]
