"""Empirical privacy auditing: ε lower bounds and tests of a claimed (ε, δ) for black-box mechanisms."""
