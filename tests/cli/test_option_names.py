"""Errors name the option the user typed, not the library parameter behind it."""

from __future__ import annotations

import contextlib
import io

import pytest

from dpkit.cli.main import main


@pytest.mark.parametrize("argv, named", [
    ("epsilon --mechanism tree-aggregation --sigma 1 --steps 0 --delta 1e-5", "--steps must be an integer >= 1"),
    ("epsilon --mechanism repeat-and-select --sigma 1 --repeat-mean 0.5 --delta 1e-5", "--repeat-mean must be in [1, inf)"),
    ("epsilon --mechanism exponential --epsilon0 nan --delta 1e-5", "--epsilon0 must be a number"),
    ("epsilon --mechanism shuffle --epsilon0 1 --users 1 --delta 1e-6", "--users must be an integer >= 2"),
    ("calibrate --mechanism gaussian --epsilon 1 --delta 1e-5 --sampling without-replacement --batch 10 --population 5",
     "--batch must be in [1, --population=5]"),
    ("epsilon --mechanism randomized-response --epsilon0 1 --k 1 --delta 1e-5", "--k must be an integer >= 2"),
    ("train --algorithm dp-admm --data synthetic --epsilon 1 --n-train 3 --agents 5", "--n-train=3 is fewer"),
])
def test_error_names_the_option(argv, named):
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = main(argv.split())
    assert status == 2 and named in err.getvalue() and len(err.getvalue().strip().splitlines()) == 1
