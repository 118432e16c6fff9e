"""Reproducibility reports: provenance, Markdown/JSON/BibTeX reports and plots from dpkit's JSON outputs."""
