"""dpkit: differential-privacy accounting, mechanisms, private distributed learning and auditing.

Subpackages
-----------
accounting   events and accountants (zCDP, RDP, PLD, GDP, (ε, δ) composition), calibration
mechanisms   vectorised, seeded samplers that carry their privacy event
algorithms   the private distributed-learning algorithms of the seed papers
audit        empirical ε lower bounds and statistical tests of a claimed (ε, δ)
"""

__version__ = "0.1.0"
