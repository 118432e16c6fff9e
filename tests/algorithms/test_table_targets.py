"""Targets (c) and (d) that ``benchmarks/training.py --tables`` adds: 75 % of the margin at ε = 3, and
within 5 points of dp-logreg at ε = 1."""

from __future__ import annotations

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROWS = 1000  # accuracies below are counts over 1,000 test rows


def _table_targets():
    spec = importlib.util.spec_from_file_location("benchmark_training", ROOT / "benchmarks" / "training.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.table_targets


def _report(baseline_correct: int) -> dict:
    """Majority 600/1000, non-private 800/1000 (margin 20 points), dp-logreg at ``baseline_correct``."""
    return {"majority": 0.6, "logistic": 0.8, "rows": {"dp-logreg": {1.0: {"accuracy": [baseline_correct / ROWS]}}}}


def test_target_c_needs_three_quarters_of_the_margin_at_eps_3():
    runs = {1.0: {"accuracy": [0.74]}, 3.0: {"accuracy": [0.75]}}  # 150 of 200 margin rows: exactly 75 %
    targets = _table_targets()(_report(760), runs)
    assert abs(targets["recovered_high"] - 0.75) < 1e-12 and targets["high_miss"] is False
    runs[3.0] = {"accuracy": [0.749]}  # one test row fewer
    assert _table_targets()(_report(760), runs)["high_miss"] is True


def test_target_d_allows_five_points_behind_dp_logreg_and_no_more():
    runs = {1.0: {"accuracy": [0.71]}}
    assert _table_targets()(_report(760), runs)["baseline_miss"] is False  # 5.0 points behind
    targets = _table_targets()(_report(761), runs)  # 5.1 points behind
    assert targets["baseline_miss"] is True and abs(targets["behind_baseline"] - 0.051) < 1e-12


def test_targets_c_and_d_do_not_apply_below_a_five_point_margin():
    report = {"majority": 0.6, "logistic": 0.64, "rows": {"dp-logreg": {1.0: {"accuracy": [0.7]}}}}
    targets = _table_targets()(report, {1.0: {"accuracy": [0.5]}, 3.0: {"accuracy": [0.5]}})
    assert targets["recovered_high"] is None and targets["behind_baseline"] is None
    assert not targets["high_miss"] and not targets["baseline_miss"]


def _table_verdicts():
    spec = importlib.util.spec_from_file_location("benchmark_training", ROOT / "benchmarks" / "training.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.table_verdicts


def test_target_e_fails_a_run_over_sixty_seconds():
    report = {**_report(760), "rows": {}}
    runs = {1.0: {"accuracy": [0.74], "seconds": [59.9]}, 3.0: {"accuracy": [0.76], "seconds": [12.0]}}
    checks = dict((text.split(" ")[0], ok) for text, ok in _table_verdicts()(report, runs))
    assert checks["(e)"] is True
    runs[3.0]["seconds"] = [12.0, 60.1]
    checks = dict((text.split(" ")[0], ok) for text, ok in _table_verdicts()(report, runs))
    assert checks["(e)"] is False
