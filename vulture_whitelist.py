"""Names vulture reports as unused in dpkit/ that are kept on purpose, each with its reason.

``tests/test_dead_code.py`` runs ``vulture dpkit/ vulture_whitelist.py --min-confidence 60`` and fails
on any finding not listed here (and on an entry here that no longer names anything in dpkit/). This
file is only parsed by vulture, never imported by dpkit.
"""


class _Anything:
    def __getattr__(self, name):
        return None


_ = _Anything()

# Public API a user calls, documented (with doctests) in docs/pld.md: adaptive composition.
_.from_target  # accounting.filters: a filter from a target (ε, δ)
_.try_spend  # accounting.filters: spend if the budget allows, else refuse
_.spend  # accounting.odometers: record a spend
_.spend_rho  # accounting.odometers.ZCDPOdometer: spend a zCDP ρ directly
_.spent_epsilon  # accounting.odometers.OdometerGuarantee field: the ε spent so far
# Public API documented in docs/pld.md: GDP conversions and trade-off curves.
_.gdp_mu_for  # accounting.gdp: largest μ meeting (ε, δ)
_.tradeoff_curve  # accounting.gdp: f-DP trade-off curve of an event or accountant
# Result fields: how a number was obtained (docs/accounting.md); set by keyword, read by users.
_.order_on_boundary  # accounting.base.AccountingResult: the optimal Rényi order hit the grid's edge
_.delta_lower  # accounting.base.AccountingResult: the certified lower end of δ (get_delta)
_.epsilon_i3  # algorithms.pp_admm.pp_admm: Ding et al. 2020's ε_i3, shown in docs/reproductions/000.md
# The mechanism contract (docs/mechanisms.md): whether the sampler is safe in floating point.
_.floating_point_safe
# Mechanism API documented in docstrings/doctests and docs/mechanisms.md.
_.from_rho  # mechanisms.gaussian: a Gaussian mechanism from a zCDP ρ
_.sample_noise  # mechanisms.erm.ObjectivePerturbation: the noise draw alone (doctested)
_.rho_actual  # mechanisms.erm: the ρ the noise really gives (vs the paper's claim)
_.paper_event  # mechanisms.erm: the paper's claimed event, labelled apart from the true one
_.output_probabilities  # mechanisms.randomized_response: the exact output law of an input
_.BELOW  # mechanisms.sparse_vector: names the code 0 of the output alphabet (ABOVE, BELOW, UNANSWERED)
# commands.audit.algorithm_audits.AuditRecord fields and Planned.quick, read by experiments/seed_audits.py (the page
# docs/paper-audits.md) and by the tests of the audits.
_.expected_violation
_.as_predicted
_.ceiling
_.audit_seed
_.quick
# report.rerun: which modules a rerun of an argv would import (shown to the user; tests/cli/test_safety.py).
_.code_to_import
# The exit-code table of every command, the one source of the table in docs/index.md.
_.EXIT_CODES
# Not dead (vulture cannot see it): numpy array flags and a generated docstring.
_.writeable  # arr.flags.writeable = False makes arrays read-only
_.__doc__  # algorithms.substrate.spec sets a generated docstring
# Module-level __getattr__/__dir__ (PEP 562): the lazy imports that keep `dpkit` and `dpkit.accounting` fast to import.
_.__getattr__
_.__dir__
# Set by the @certified decorator, read by tests/accounting/test_certified_exit.py's static check.
_._dpkit_certified
# audit.libraries.LibraryCase fields, read by scripts/gallery.py (the page's columns and CI budget).
_.library
_.claim_source
_.small_samples
_.pairs_label
# Renders the exit-code table that docs/index.md holds; tests/cli/test_exit_codes.py compares the two.
_.exit_code_table
# io.TextIOBase protocol of the stdout proxy in commands.user_code.
_.writable
# Opacus's IAccountant interface (interop.opacus), called by Opacus's PrivacyEngine and by users.
_.get_optimizer_hook_fn
_.load_state_dict
# Audit throughput (docs/audit.md "Run-time estimates"): result fields set by keyword, read by users.
_.throughput  # audit.result.AuditResult / audit.search.SearchResult: the pilot, the workers, the estimates
_.pilot_outputs  # audit.throughput.CallCost: outputs the pilot drew
_.pilot_seconds  # audit.throughput.CallCost: seconds the pilot took
