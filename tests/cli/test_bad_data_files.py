"""Bad data files get one line naming the file and the line, exit 2, before anything large is allocated.

Over-long fields, NUL bytes, non-UTF-8 text, LIBSVM indices whose dense matrix would pass
MAX_DENSE_BYTES, and extreme ``--bounds``; the caps themselves are tested at their boundary
by lowering them.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import os
import tracemalloc
import warnings

import numpy as np
import pytest

from dpkit.algorithms.substrate import data as D
from dpkit.cli.main import main


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning fails the test instead of reaching the user
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def train(path, *options: str) -> tuple[int, str, str]:
    return run_cli(["train", "--algorithm", "dp-logreg", "--epsilon", "1", "--quiet", "--data", str(path), *options])


def assert_one_line_usage_error(result: tuple[int, str, str], *fragments: str) -> str:
    status, out, err = result
    lines = err.strip().splitlines()
    assert status == 2 and out == "" and len(lines) == 1, (status, err)
    assert "failure inside dpkit" not in lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def test_a_five_megabyte_numeric_field_is_read(tmp_path):
    table = tmp_path / "long.csv"
    table.write_text("a,b,label\n1,2,1\n3,0." + "1" * 5_000_000 + ",0\n")
    limit = csv.field_size_limit()
    data = D.load_csv(table, preprocess=False)
    assert data.X[1].tolist() == [3.0, pytest.approx(1 / 9)]
    assert csv.field_size_limit() == limit  # raised for the read only


def test_an_over_long_number_is_shown_cut(tmp_path):
    table = tmp_path / "long.csv"
    table.write_text("a,b,label\n1,2,1\n3," + "4" * 5_000_000 + ",0\n")  # 4.4e4999999: not finite
    line = assert_one_line_usage_error(train(table), str(table), "line 3", "non-finite", "5000000 characters")
    assert len(line) < 400


def test_a_line_past_the_cap_names_the_file_and_line(tmp_path, monkeypatch):
    monkeypatch.setattr(D, "MAX_LINE_BYTES", 64)
    table = tmp_path / "wide.csv"
    lines = ["a,label", "1,1", "1" * 61 + ",1", "1" * 62 + ",1"]  # 63 and 64 bytes: within the cap
    table.write_text("\n".join(lines) + "\n")
    assert D.load_csv(table, preprocess=False).n == 3
    table.write_text("\n".join([*lines, "1" * 63 + ",1"]) + "\n")  # 65 bytes
    with pytest.raises(ValueError, match=r"line 5 of .*wide.csv.* longer than 64 bytes"):
        D.load_csv(table)


def test_a_sparse_two_gibibyte_file_is_refused_at_its_first_line(tmp_path):
    sparse = tmp_path / "sparse.csv"
    with open(sparse, "wb") as handle:
        handle.truncate(2 * 2**30)  # all NUL bytes, no disk blocks
    assert_one_line_usage_error(train(sparse), str(sparse), "line 1", "NUL byte")


@pytest.mark.parametrize("name, text, line", [
    ("nul.csv", "a,b,label\n1,2,1\n3,\x004,0\n", "line 3"),
    ("nul.libsvm", "1 1:2\n-1 2:\x003\n", "line 2"),
])
def test_nul_bytes_name_the_line(tmp_path, name, text, line):
    path = tmp_path / name
    path.write_text(text)
    assert_one_line_usage_error(train(path), str(path), line, "NUL byte")


def test_text_that_is_not_utf8_names_its_line(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"a,b,label\n1,2,1\n3,\xff4,0\n")
    assert_one_line_usage_error(train(path), str(path), "line 3", "not UTF-8")


def test_a_huge_libsvm_index_is_refused_before_allocating(tmp_path):
    path = tmp_path / "huge.libsvm"
    path.write_text("1 1:2\n-1 1000000000:3\n")
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as raised:
            D.load_libsvm(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "line 2" in str(raised.value) and str(path) in str(raised.value) and "MAX_DENSE_BYTES" in str(raised.value)
    assert peak < 16 * 2**20  # the 16 GB matrix was never asked for
    assert_one_line_usage_error(train(path), str(path), "line 2", "GiB")


def test_the_dense_cap_holds_at_its_boundary(tmp_path, monkeypatch):
    # 2 rows, index k, and the bias column: 2 * (k + 1) * 8 bytes
    monkeypatch.setattr(D, "MAX_DENSE_BYTES", 2 * 10 * 8)
    path = tmp_path / "edge.libsvm"
    path.write_text("1 1:2\n-1 9:3\n")
    assert D.load_libsvm(path, preprocess=False).X.shape == (2, 9)
    path.write_text("1 1:2\n-1 10:3\n")
    with pytest.raises(ValueError, match=r"at line 2, 2 rows x 11 columns"):
        D.load_libsvm(path)
    # the index is checked against the rows read so far: a later row can pass the cap
    path.write_text("1 10:2\n" + "-1 1:1\n")
    with pytest.raises(ValueError, match=r"at line 2, 2 rows x 11 columns"):
        D.load_libsvm(path)
    # a repeated index adds no column, but its entries (24 bytes each) count against the cap too
    path.write_text("1 " + " ".join(["1:1"] * 6) + "\n")
    assert D.load_libsvm(path, preprocess=False).X.tolist() == [[1.0]]
    path.write_text("1 " + " ".join(["1:1"] * 7) + "\n")
    with pytest.raises(ValueError, match=r"at line 1, its 7 entries"):
        D.load_libsvm(path)


def test_a_csv_stops_at_the_line_that_passes_the_dense_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(D, "MAX_DENSE_BYTES", 10 * 3 * 8)  # ten rows of two features and the bias column
    table = tmp_path / "rows.csv"
    table.write_text("a,b,label\n" + "1,2,1\n" * 10)
    assert D.load_csv(table).n == 10
    table.write_text("a,b,label\n" + "1,2,1\n" * 11)
    with pytest.raises(ValueError, match=r"at line 12, 11 rows x 3 columns"):
        D.load_csv(table)


@pytest.mark.parametrize("bounds", ["1e-320,1", "5e-324:1e-323,1", "inf,1", "nan,1", "2:1,1", "1e308,1", "-1,1",
                                    "0,1", "-1e308:1e308,1"])
def test_extreme_bounds_exit_2_with_one_line_and_no_warning(tmp_path, bounds):
    table = tmp_path / "t.csv"
    table.write_text("a,b,label\n0.5,0.2,1\n0.1,0.1,0\n0.3,0.4,1\n0.2,0.9,0\n")
    assert_one_line_usage_error(train(table, f"--bounds={bounds}"), "--bounds", "column 0")


def test_a_value_far_outside_a_wide_range_is_clipped_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scaled = D.scale_to_ranges(np.array([[1.7e308], [-1.7e308], [0.0]]), np.array([-8e307]), np.array([8e307]))
    assert scaled[:, 0].tolist() == [1.0, -1.0, 0.0]
    assert math.isfinite(float(np.sum(scaled)))


def test_good_files_still_train(tmp_path):
    table = tmp_path / "ok.csv"
    rng = np.random.default_rng(0)
    rows = "".join(f"{a:.3f},{b:.3f},{int(a > b)}\n" for a, b in rng.random((120, 2)))
    table.write_text("a,b,label\n" + rows)
    status, out, err = train(table, "--bounds=1,0:1")
    assert status == 0 and "test accuracy" in out and os.path.exists(table), err
