"""Hypothesis fuzzing of every subcommand: never a traceback, always exit 0/1/2/3 with a message."""

from __future__ import annotations

import contextlib
import io

from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.cli.main import main

NUMBERS = st.sampled_from(["0", "-1", "1", "0.5", "1e-300", "1e300", "nan", "inf", "-inf", "abc", "", "3.7", "1e-5",
                           "100000000000000", "-0"])
PATHS = st.sampled_from(["/nonexistent/x.json", "/", "/dev/null", "/proc/self/status", "", "."])

OPTIONS = {
    "epsilon": ["--sigma", "--scale", "--epsilon0", "--k", "--sensitivity", "--count", "--rate", "--batch",
                "--population", "--delta"],
    "calibrate": ["--epsilon", "--delta", "--rtol", "--k", "--sensitivity", "--count", "--rate", "--batch",
                  "--population"],
    "audit": ["--claimed-epsilon", "--claimed-delta", "--mechanism-epsilon", "--mechanism-delta", "--sensitivity",
              "--threshold", "--cutoff", "--length", "--samples", "--confidence", "--seed", "--workers",
              "--batch-timeout"],
}
CHOICES = {
    "epsilon": {"--mechanism": ["gaussian", "laplace", "randomized-response", "bogus"],
                "--sampling": ["none", "poisson", "without-replacement"],
                "--accountant": ["rdp", "zcdp", "pld", "gdp", "analytic", "approx"]},
    "calibrate": {"--mechanism": ["gaussian", "laplace", "randomized-response"],
                  "--accountant": ["rdp", "zcdp", "pld", "analytic"]},
    "audit": {"--mechanism": ["laplace", "gaussian", "rnm", "svt", "nosuch", "nosuchmodule:f", "os:getcwd"],
              "--pairs": ["statdp", "statdp-one", "statdp-monotone"]},
}


@st.composite
def command_lines(draw):
    command = draw(st.sampled_from(["epsilon", "calibrate", "audit", "report"]))
    argv = [command]
    if command == "report":
        argv += draw(st.lists(PATHS, min_size=0, max_size=2))
        if draw(st.booleans()):
            argv += ["--out", draw(PATHS)]
        argv += draw(st.lists(st.sampled_from(["--force", "--no-plots", "--no-rerun", "--json", "--ou"]), max_size=2))
        return argv
    for option in draw(st.lists(st.sampled_from(OPTIONS[command]), max_size=4, unique=True)):
        argv += [option, draw(NUMBERS)]
    for option, values in CHOICES[command].items():
        if draw(st.booleans()):
            argv += [option, draw(st.sampled_from(values))]
    if command == "audit":
        argv += ["--quiet", "--samples", draw(st.sampled_from(["1", "30000", "-5"]))]
    if draw(st.booleans()):
        argv.append("--json")
    return argv


@settings(max_examples=120)
@given(command_lines())
def test_no_traceback_and_a_documented_exit_code(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    text = err.getvalue()
    assert "Traceback" not in text, (argv, text)
    assert "inside dpkit" not in text, (argv, text)  # an unexpected exception is a bug
    assert status in (0, 1, 2, 3), (argv, status, text)
    if status in (1, 2):
        assert text.strip(), argv
