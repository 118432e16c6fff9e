"""Datasets: the packaged UCI Adult, the directory loader, the other loaders."""

from __future__ import annotations

import gzip
import hashlib
import os
import tomllib
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpkit.algorithms.substrate import data as D

PACKAGED = resources.files("dpkit.algorithms.substrate").joinpath("datasets")


@pytest.mark.parametrize("name, records", [("adult.data", 32561), ("adult.test", 16281)])
def test_packaged_files_are_the_uci_files(name, records):
    # UCI adult.names: 32,561 training and 16,281 test instances; the SHA-256 in the README is that of
    # the file taken from the UCI repository, so a changed byte in the packaged copy fails here
    raw = gzip.decompress(PACKAGED.joinpath(name + ".gz").read_bytes())
    assert sum(1 for line in raw.decode().splitlines() if line.strip()) == records
    readme = PACKAGED.joinpath("README.md").read_text()
    assert f"`{name}`" in readme and hashlib.sha256(raw).hexdigest() in readme


def test_packaged_adult_equals_the_directory_copy(adult_dir):
    packaged, directory = D.load_adult(), D.load_adult(adult_dir)
    assert np.array_equal(packaged.X, directory.X) and np.array_equal(packaged.y, directory.y)
    assert packaged.feature_names == directory.feature_names
    assert D.load_dataset("adult") is packaged  # cached: one parse per process


def test_packaged_adult_has_the_uci_counts():
    # UCI adult.names: 48,842 instances, 45,222 without unknown values; 11,208 of those have income >50K
    ds = D.load_adult()
    assert ds.X.shape == (45222, 104) and int(np.sum(ds.y > 0)) == 11208
    assert np.all(np.sum(ds.X**2, axis=1) <= 1.0)
    assert D.load_adult(variant="124").n == 48842


def test_packaged_copy_is_cited_and_declared_as_package_data():
    readme = PACKAGED.joinpath("README.md").read_text()
    assert "10.24432/C5XW20" in readme and "CC BY 4.0" in readme and "@misc{becker1996adult" in readme
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["dpkit.algorithms.substrate"]
    for name in ("adult.data.gz", "adult.test.gz", "README.md"):
        assert any(Path("datasets", name).match(p) for p in patterns), name


@pytest.mark.slow
def test_adult_variants_dimensions(adult_dir):
    # d = 104 (Huang et al. 2019 §VI-A, 45,222 complete rows), 105 (+ bias), 124 (a9a layout)
    expected = {"104": (45222, 104), "105": (45222, 105), "124": (48842, 124)}
    for variant, shape in expected.items():
        ds = D.load_adult(adult_dir, variant)
        assert ds.X.shape == shape
        assert set(np.unique(ds.y)) == {-1.0, 1.0}
        assert np.all(np.sum(ds.X**2, axis=1) <= 1.0)
        assert np.max(np.abs(ds.X)) <= 1.0


def test_adult_directory_errors(tmp_path, adult_dir):
    with pytest.raises(FileNotFoundError, match="nope"):
        D.load_adult(tmp_path / "nope")
    bad = tmp_path / "adult"
    bad.mkdir()
    lines = (adult_dir / "adult.data").read_text().splitlines()[:5]
    lines.insert(3, "39, State-gov, 77516, Bachelors")
    (bad / "adult.data").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="line 4"):
        D.load_adult(bad, files=("adult.data",))
    del lines[3]
    (bad / "adult.data").write_text("\n".join(lines) + "\n")
    with pytest.raises(FileNotFoundError, match="adult.test"):
        D.load_adult(bad)
    with pytest.raises(ValueError, match="variant"):
        D.load_adult(adult_dir, "41")


def test_adult_directory_reread_after_a_change(tmp_path, adult_dir):
    folder = tmp_path / "adult"
    folder.mkdir()
    lines = (adult_dir / "adult.data").read_text().splitlines()
    (folder / "adult.data").write_text("\n".join(lines[:50]) + "\n")
    assert D.load_adult(folder, files=("adult.data",)).n <= 50
    (folder / "adult.data").write_text("\n".join(lines[:80]) + "\n")
    os.utime(folder / "adult.data", ns=(1, 10**18))
    assert 50 < D.load_adult(folder, files=("adult.data",)).n <= 80


def test_libsvm_and_csv_loaders(tmp_path):
    f = tmp_path / "toy.svm"
    f.write_text("+1 1:3 3:4\n-1 2:1\n0 1:1\n")
    ds = D.load_libsvm(f, preprocess=False)
    assert ds.X.tolist() == [[3, 0, 4], [0, 1, 0], [1, 0, 0]] and ds.y.tolist() == [1, -1, -1]
    f.write_text("+1 1:3 3:4\n-1 2:x\n")
    with pytest.raises(ValueError, match="line 2"):
        D.load_libsvm(f)
    c = tmp_path / "toy.csv"
    c.write_text("a,b,label\n1,2,1\n3,4,0\n")
    ds = D.load_csv(c)
    assert ds.feature_names == ("a", "b", "bias") and ds.y.tolist() == [1, -1]
    assert np.all(np.linalg.norm(ds.X, axis=1) <= 1.0)
    c.write_text("1,2,1\n3,4\n")
    with pytest.raises(ValueError, match="line 2"):
        D.load_csv(c)
    with pytest.raises(FileNotFoundError, match="missing.csv"):
        D.load_csv(tmp_path / "missing.csv")
    with pytest.raises(FileNotFoundError, match="no/such"):
        D.load_dataset("no/such/path")
    with pytest.raises(TypeError, match="data"):
        D.load_dataset("")


def test_builtin_and_synthetic():
    ds = D.load_builtin()
    assert ds.n == 6366 and ds.d == 9 and int(np.sum(ds.y > 0)) == 2053
    a, b = D.make_synthetic(50, 3, rng=1), D.make_synthetic(50, 3, rng=1)
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)
    assert np.all(np.linalg.norm(a.X, axis=1) <= 1.0)


def test_binary_files_and_bad_label_columns_are_named_errors(tmp_path):
    from dpkit.algorithms.substrate.data import load_csv, load_libsvm

    binary = tmp_path / "data.csv"
    binary.write_bytes(b"\x00\xff\xfe\x01")
    for loader, kind in ((load_csv, "CSV"), (load_libsvm, "LIBSVM")):
        with pytest.raises(ValueError, match=f"data.csv.*not a text {kind} file"):
            loader(binary)
    table = tmp_path / "table.csv"
    table.write_text("1,2,1\n3,4,-1\n")
    with pytest.raises(ValueError, match="label_column=99 is out of range.*3 columns"):
        load_csv(table, label_column=99)
    assert load_csv(table, label_column=-1).n == 2


def test_csv_label_column_by_name_or_index_and_errors_name_the_column(tmp_path):
    table = tmp_path / "survey.csv"
    table.write_text("income,age,hours\n1,30,40\n0,50,20\n1,41,38\n")
    by_name = D.load_csv(table, label_column="income", preprocess=False)
    by_index = D.load_csv(table, label_column=0, preprocess=False)
    assert by_name.feature_names == by_index.feature_names == ("age", "hours")
    assert by_name.y.tolist() == by_index.y.tolist() == [1, -1, 1]
    assert by_name.X.tolist() == [[30, 40], [50, 20], [41, 38]]
    with pytest.raises(ValueError, match="label column 'salary' is not in the header.*income, age, hours"):
        D.load_csv(table, label_column="salary")
    with pytest.raises(ValueError, match=r"-1/0/\+1 in .* at line 2, label column 2 \('hours'\), got '40'"):
        D.load_csv(table, label_column="hours")
    table.write_text("income,age,hours\n1,30,40\n0,fifty,20\n")
    with pytest.raises(ValueError, match=r"line 3, column 1 \('age'\): 'fifty' is not a number"):
        D.load_csv(table, label_column="income")
    bare = tmp_path / "bare.csv"
    bare.write_text("1,30,40\n0,50,20\n")
    with pytest.raises(ValueError, match="no header line"):
        D.load_csv(bare, label_column="income")


def test_file_format_is_given_or_stated_never_guessed(tmp_path):
    text = tmp_path / "table.txt"
    text.write_text("a,b,label\n1,2,1\n3,4,0\n")
    with pytest.raises(ValueError, match=r"cannot tell the format of .*table.txt.*\(\.txt\).*--format"):
        D.load_dataset(str(text))
    assert D.load_dataset(str(text), format="csv").feature_names == ("a", "b", "bias")
    with pytest.raises(ValueError, match="malformed label.*line 1"):
        D.load_dataset(str(text), format="libsvm")  # a CSV line is not a LIBSVM line: refused, not misread
    assert D.file_format(str(tmp_path / "x.svm")) == ("libsvm", "from the extension .svm")
    (tmp_path / "x.svm").write_text("+1 1:1\n")
    with pytest.raises(ValueError, match="label applies to CSV files only"):
        D.load_dataset(str(tmp_path / "x.svm"), label=0)
    with pytest.raises(ValueError, match="data files only"):
        D.load_dataset("adult", label="income")


def test_file_scaling_uses_public_bounds_or_nothing_from_the_rows(tmp_path):
    """A user's file is scaled by ranges the user gives, by its own ranges the user declares public,
    or not at all: by default a row's features do not depend on any other row."""
    table = tmp_path / "t.csv"
    table.write_text("a,b,label\n0.5,0.2,1\n0.1,0.1,0\n")
    alone = D.load_csv(table)
    table.write_text("a,b,label\n0.5,0.2,1\n0.1,0.1,0\n40,0.3,1\n")
    assert np.array_equal(D.load_csv(table).X[:2], alone.X)  # a new row changes no other row
    bounded = D.load_csv(table, bounds=[10.0, 1.0], intercept=False)
    assert bounded.X[2, 0] == pytest.approx(1.0 / np.hypot(1.0, 0.3)) and bounded.X[0, 0] == pytest.approx(0.05)
    # declared-public ranges: a ∈ [0.1, 40] and b ∈ [0.1, 0.3] are centred onto [-1, 1]
    public = D.load_csv(table, public_scaling=True, intercept=False).X
    assert public[0] == pytest.approx([2 * 0.4 / 39.9 - 1, 0.0]) and public[2] == pytest.approx(np.array([1, 1]) / np.sqrt(2))
    ranged = D.load_csv(table, bounds=[(0.0, 10.0), 1.0], intercept=False)  # LOW:HIGH and B = [-B, B]
    assert ranged.X[0] == pytest.approx([-0.9, 0.2]) and ranged.X[2, 0] == pytest.approx(1 / np.hypot(1, 0.3))
    prior = D.load_csv(table, bounds=[10.0, 1.0])  # the bias column lets a model predict the class prior
    assert prior.feature_names[-1] == "bias" and np.all(prior.X[:, -1] > 0)
    with pytest.raises(ValueError, match="one bound per feature column"):
        D.load_csv(table, bounds=[1.0])
    for bad in ([0.0, 1.0], [(2.0, 1.0), 1.0], [float("nan"), 1.0]):
        with pytest.raises(ValueError, match="bounds must be finite numbers > 0 or pairs low < high"):
            D.load_csv(table, bounds=bad)
    for choice in ({"bounds": [1.0, 1.0], "public_scaling": True}, {"public_scaling": True, "private_scaling": True},
                   {"bounds": [1.0, 1.0], "private_scaling": True}):
        with pytest.raises(ValueError, match="at most one of bounds, public_scaling and private_scaling"):
            D.load_dataset(str(table), **choice)
    raw = D.load_csv(table, private_scaling=True)  # left to the training call: columns as read, bias appended
    assert raw.private_scaling and raw.X.tolist() == [[0.5, 0.2, 1.0], [0.1, 0.1, 1.0], [40.0, 0.3, 1.0]]
    assert raw.subset(np.array([2])).private_scaling and not D.load_csv(table).private_scaling


@settings(max_examples=40, deadline=None)
@given(arrays(float, st.tuples(st.integers(1, 12), st.integers(1, 4)), elements=st.floats(-1e6, 1e6)),
       st.integers(0, 3))
def test_declared_ranges_reach_the_unit_box_and_keep_zeros(X, sparse_column):
    """Every column lands in [-1, 1]; a column whose minimum is 0 is x / max (zeros stay 0, sparse
    rows stay sparse); any other non-constant column is centred so its extremes hit -1 and +1."""
    column = sparse_column % X.shape[1]
    X[:, column] = np.abs(X[:, column])
    X[0, column] = 0.0
    Z = D.normalise(X, ranges=True, row_norm=False)
    assert np.all(np.abs(Z) <= 1.0)
    top = X[:, column].max()
    assert np.allclose(Z[:, column], X[:, column] / top if top > 0 else 0.0)
    for j in range(X.shape[1]):
        low, high = X[:, j].min(), X[:, j].max()
        if low != 0 and high > low and high - low > 1e-9 * max(abs(low), abs(high)):
            assert Z[np.argmin(X[:, j]), j] == pytest.approx(-1.0) and Z[np.argmax(X[:, j]), j] == pytest.approx(1.0)


def test_public_scaling_refuses_a_column_wider_than_floating_point():
    """A column spanning [−1e308, 1e308] has a width that overflows: mapping it onto [−1, 1] would
    send every value to one end, so the scaling refuses and names the column."""
    X = np.array([[-1e308, 0.0], [1e308, 3.0]])
    with pytest.raises(ValueError, match=r"column 0 \('income'\).*rescale the column or give its bounds"):
        D.preprocess_features(X, ("income", "visits"), public_scaling=True)
    kept, _ = D.preprocess_features(X[:, 1:], ("visits",), public_scaling=True)
    assert np.all(np.isfinite(kept))


def test_a_users_adult_folder_gets_the_text_checks(tmp_path):
    """A user's Adult folder is read a line at a time like any data file: a NUL byte is named with
    its file and line, not read into a row."""
    good = "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, " \
           "40, United-States, <=50K\n"
    (tmp_path / "adult.data").write_text(good * 3, encoding="utf-8")
    (tmp_path / "adult.test").write_bytes(good.encode() + b"39, State-gov\0, 77516\n")
    with pytest.raises(ValueError, match=r"adult\.test.*line 2 holds a NUL byte"):
        D.load_adult(tmp_path)
    (tmp_path / "adult.test").write_text(good, encoding="utf-8")
    assert D.load_adult(tmp_path).n == 4
