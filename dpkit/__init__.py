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

from dpkit.accounting import PLDAccountant, RDPAccountant, calibrate  # noqa: E402  (after __version__)
import dpkit.audit  # noqa: E402,F401  (the subpackage, never rebound to its function)
from dpkit.mechanisms import GaussianMechanism  # noqa: E402

__all__ = ["GaussianMechanism", "PLDAccountant", "RDPAccountant", "calibrate"]
