"""Vectorised, seeded privacy mechanisms; each exposes the privacy event it spends."""
