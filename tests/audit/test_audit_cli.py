"""``dpkit audit`` command line."""

from __future__ import annotations

import json
import re

import pytest

from dpkit.cli.main import main
from dpkit.commands.audit import progress as audit_progress

# The built-in laplace and gaussian are dpkit's float-safe defaults (private as executed), so the tests of the
# command's verdicts, exit codes and printing run the default audit, float bits on; EXACT (values only) is for
# the test of the option itself.
EXACT = "--no-float-bits"


def test_builtin_mechanism_json(capsys):
    # calibrated to 0.9, claimed 1.0: a pass whatever the draw (the bound would need ~5 sd of luck)
    code = main(["audit", "--mechanism", "laplace", "--mechanism-epsilon", "0.9", "--claimed-epsilon", "1.0",
                 "--samples", "100000", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["violation"] is False and out["pairs"] == "statdp-one"
    assert out["epsilon_lower_bound"] <= 1.0 and out["samples"] <= 100_000


def test_builtin_miscalibrated_is_flagged(capsys):
    # a Laplace mechanism calibrated to ε = 2 audited against a claim of 1
    code = main(["audit", "--mechanism", "laplace", "--mechanism-epsilon", "2", "--claimed-epsilon", "1",
                 "--samples", "200000", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 3 and out["violation"] is True and out["p_value"] <= 0.05  # 3: claim refuted


def test_user_function_and_text_output(capsys):
    code = main(["audit", "--mechanism", "dpkit.audit.catalogue:leaky_sum", "--pairs", "statdp-one", "--claimed-epsilon", "1",
                 "--samples", "100000", "--quiet"])
    text = capsys.readouterr().out
    assert code == 3 and "VIOLATION" in text and "epsilon lower bound" in text


@pytest.mark.parametrize("argv,message", [
    (["--mechanism", "nosuch", "--claimed-epsilon", "1"], "must be one of"),
    (["--mechanism", "nosuchmodule:f", "--pairs", "statdp-one", "--claimed-epsilon", "1"], "cannot load"),
    (["--mechanism", "laplace", "--claimed-epsilon", "1", "--confidence", "2"], "confidence"),
    (["--mechanism", "laplace", "--claimed-epsilon", "1", "--workers", "0"], "workers"),
    (["--mechanism", "laplace", "--claimed-epsilon", "-1"], "--claimed-epsilon must be in [0, inf), got --claimed-epsilon=-1.0"),
    (["--mechanism", "laplace", "--claimed-epsilon", "1", "--claimed-delta", "1.5"], "--claimed-delta must be in [0, 1)"),
])
def test_errors_are_one_line(capsys, argv, message):
    assert main(["audit", *argv, "--samples", "50000"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


# ---------------------------------------------------------------- exit codes, p-values, the new library options

MISCALIBRATED = ["audit", "--mechanism", "laplace", "--mechanism-epsilon", "3", "--claimed-epsilon", "1",
                 "--samples", "200000", "--quiet"]


def test_refuted_claim_exits_3_in_text_and_json(capsys):
    assert main(MISCALIBRATED) == 3
    text = capsys.readouterr().out
    assert "VIOLATION: claim refuted" in text and "neighbouring relation: one record changes" in text
    assert main([*MISCALIBRATED, "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["violation"] is True and 1.0 < out["epsilon_lower_bound"] <= 3.0  # true epsilon 3


def test_p_value_at_the_floor_is_shown_as_a_bound(capsys):
    assert main([*MISCALIBRATED, "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["p_value_floor"] is True and out["p_value"] <= 1e-15
    main(MISCALIBRATED)
    assert "(p < 1e-15)" in capsys.readouterr().out


def test_a_pass_states_what_it_rules_out(capsys):
    argv = ["audit", "--mechanism", "laplace", "--claimed-epsilon", "1", "--samples", "200000", "--quiet"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["p_value_floor"] is False
    if out.get("detectable_epsilon") is None:
        pytest.skip("this dpkit.audit.audit reports no detectable_epsilon")
    # detection means the bound exceeds the claim, so what is detectable lies above the claim
    assert out["detectable_epsilon"] > 1.0
    assert main(argv) == 0
    text = capsys.readouterr().out
    match = re.search(r"would have detected epsilon above ([0-9.]+) with probability 0.95", text)
    assert match and float(match.group(1)) == pytest.approx(out["detectable_epsilon"], rel=1e-3)
    assert "note: pass:" not in text  # the library's note is that line, not repeated


def test_sequential_run_says_where_it_stopped(capsys):
    argv = ["audit", "--mechanism", "laplace", "--claimed-epsilon", "1", "--samples", "400000", "--sequential",
            "--quiet"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    if out.get("stopping_samples") is None:
        pytest.skip("this dpkit.audit.audit reports no stopping_samples")
    assert out["stopping_samples"] == out["witness"]["samples_per_input"]
    main(argv)
    text = capsys.readouterr().out
    assert f"sequential: stopped after {out['stopping_samples']} outputs per input" in text
    assert "to look further, run a new audit with more samples and another seed" in text


def test_samples_auto(capsys):
    argv = ["audit", "--mechanism", "laplace", "--mechanism-epsilon", "2", "--claimed-epsilon", "1",
            "--samples", "auto", "--quiet", "--json"]
    assert main(argv) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["dpkit"]["config"]["samples"] == "auto" and any("samples='auto'" in n for n in out["notes"])
    assert 1.0 < out["epsilon_lower_bound"] <= 2.0


@pytest.mark.parametrize("value", ["abc", "0", "-3", "1.5"])
def test_samples_must_be_a_positive_integer_or_auto(capsys, value):
    assert main(["audit", "--mechanism", "laplace", "--claimed-epsilon", "1", "--samples", value]) == 2
    assert "must be an integer >= 1 or auto" in capsys.readouterr().err


def test_float_events_find_the_textbook_laplace_sampler(capsys):
    # the textbook inverse-CDF Laplace sampler outputs values on one input it cannot output on the other (Mironov 2012)
    code = main(["audit", "--mechanism", "laplace", "--continuous-noise", "--claimed-epsilon", "1", "--samples", "20000",
                 "--float-events", "--quiet", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 3 and out["violation"] is True and out["witness"]["event"]["family"] == "float"
    bound = out["epsilon_lower_bound"]
    assert bound == "inf" or bound > 1.0  # infinite as executed, or a certified bound from the witness counts


def test_run_time_estimate_is_printed_on_stderr(capsys, monkeypatch):
    monkeypatch.setattr(audit_progress, "ESTIMATE_NOTICE_SECONDS", 0.0)
    assert main(["audit", "--mechanism", "laplace", "--mechanism-epsilon", "0.9", "--claimed-epsilon", "1",
                 "--samples", "100000", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "at this rate for 10^5 samples; use --samples to lower it" in captured.err
    assert "at this rate" not in captured.out


def test_gaussian_assumption_is_labelled(capsys):
    # a Gaussian mechanism calibrated to (3, 1e-5): its curve is Gaussian, so the assumed route is valid here
    argv = ["audit", "--mechanism", "gaussian", "--mechanism-epsilon", "3", "--claimed-epsilon", "1",
            "--claimed-delta", "1e-5", "--assumption", "gaussian", "--samples", "200000", "--quiet"]
    assert main([*argv, "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["assumption"] and 1.0 < out["epsilon_lower_bound"] <= 3.0
    assert main(argv) == 3
    printed = capsys.readouterr().out
    assert "\nassumption: " in printed and "VIOLATION under the stated assumption" in printed
    assert main(["audit", "--mechanism", "laplace", "--claimed-epsilon", "1", "--assumption", "gaussian"]) == 2
    assert "--assumption gaussian needs --claimed-delta > 0" in capsys.readouterr().err
    # a correct Laplace mechanism is not Gaussian: the fit would refute its true claim, so it is refused
    assert main(["audit", "--mechanism", "laplace", "--claimed-epsilon", "1", "--claimed-delta", "1e-5",
                 "--assumption", "gaussian"]) == 2
    assert "--assumption gaussian applies to --mechanism gaussian" in capsys.readouterr().err


def test_float_bits_are_on_by_default_and_no_float_bits_reads_the_values(capsys):
    # with --continuous-noise the built-in laplace is 1-DP over the reals only; as executed its float
    # outputs leak (Mironov 2012), and the default float-bit events find it from the outputs alone
    argv = ["audit", "--mechanism", "laplace", "--continuous-noise", "--claimed-epsilon", "1", "--samples", "40000",
            "--quiet", "--json"]
    assert main(argv) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["witness"]["event"]["family"].startswith("float")
    assert main([*argv, EXACT]) == 0
    out = json.loads(capsys.readouterr().out)
    assert any(n.startswith("float_bits=False") for n in out["notes"])


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_the_default_builtin_passes_the_default_audit_that_refutes_the_continuous_one(capsys, mechanism):
    # the default sampler releases the continuous output rounded exactly to a lattice (post-processing),
    # so the bits of its outputs carry nothing the claim does not cover; --continuous-noise is refuted above
    argv = ["audit", "--mechanism", mechanism, "--claimed-epsilon", "1", "--samples", "40000", "--quiet", "--json"]
    if mechanism == "gaussian":
        argv += ["--claimed-delta", "1e-5"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["violation"] is False and 0.0 <= out["epsilon_lower_bound"] <= 1.0
    assert "float_safe=True" in out["mechanism"]
    # the same analyser refutes the default form against a claim below its ε (positive control)
    assert main(["audit", "--mechanism", "laplace", "--mechanism-epsilon", "3", "--claimed-epsilon", "1",
                 "--samples", "200000", "--quiet", "--json"]) == 3


@pytest.mark.parametrize("argv,message", [
    (["--mechanism", "my_module:f", "--pairs", "statdp-one", "--continuous-noise"],
     "--continuous-noise applies to --mechanism laplace or gaussian or rnm"),
])
def test_float_safe_errors(capsys, argv, message):
    assert main(["audit", *argv, "--claimed-epsilon", "1", "--samples", "50000"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
