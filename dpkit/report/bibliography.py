"""BibTeX entries of the methods behind dpkit's numbers, and the selection for one report.

A report cites *exactly* the methods its numbers depend on: the mechanisms that spent the
budget, the accountants, conversions and subsampling bounds that turned events into (ε, δ)
(the ``references`` every :class:`~dpkit.accounting.base.AccountingResult` carries), the
algorithm's papers (:data:`ALGORITHM_KEYS`, by registry name), the data set
(:data:`DATASET_KEYS`, by the name in a train document's ``config["data"]``), and the audit's
statistics (the ``references`` of its result). Keys come from these structured fields and
tables only, never from free text. :func:`keys_for` makes that selection; :func:`render_bibtex`
writes the entries.

The entries live in the data file ``references.bib`` beside this module (package data), read once
by :func:`parse_bibtex`. Only entries whose metadata were checked are listed; missing page
numbers are left out rather than guessed.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import Iterable, Mapping

BIB_FILE = "references.bib"
"""The package data file holding every entry."""

_ENTRY_START = re.compile(r"^@(\w+)\{([^,\s]+),", re.MULTILINE)


def parse_bibtex(text: str) -> dict[str, str]:
    r"""Key → the entry's text (``@type{key, ...}`` exactly as written), in file order.

    Text outside entries (``%`` comment lines, blank lines) is ignored. Braces are balanced per
    entry; an unbalanced entry or a repeated key raises ``ValueError`` naming the key.

    >>> parse_bibtex("% a comment\n@misc{k1,\n  title = {A {B}}\n}\n")
    {'k1': '@misc{k1,\n  title = {A {B}}\n}'}
    """
    entries: dict[str, str] = {}
    for match in _ENTRY_START.finditer(text):
        key, depth = match.group(2), 0
        for end in range(match.start() + 1 + len(match.group(1)), len(text)):  # from the opening brace
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                break
        else:
            raise ValueError(f"bibliography entry {key!r}: unbalanced braces")
        if key in entries:
            raise ValueError(f"bibliography entry {key!r} appears twice")
        entries[key] = text[match.start():end + 1]
    return entries


def _load_entries() -> dict[str, str]:
    return parse_bibtex(resources.files("dpkit.report").joinpath(BIB_FILE).read_text(encoding="utf-8"))


ENTRIES: dict[str, str] = _load_entries()
"""Key → BibTeX entry text, read from ``references.bib`` beside this module (package data)."""

#: Event kinds (``PrivacyEvent.to_dict()["kind"]``) → the mechanism's paper.
MECHANISM_KEYS: dict[str, str] = {
    "gaussian": "dwork2006our",
    "discrete_gaussian": "canonne2020discrete",
    "laplace": "dwork2006calibrating",
    "discrete_laplace": "dwork2006calibrating",
    "randomized_response": "warner1965randomized",
    "exponential_mechanism": "mcsherry2007mechanism",
    "sparse_vector": "lyu2017understanding",
    "gaussian_sparse_vector": "zhu2020improving",
    "tree_aggregation": "kairouz2021practical",
    "repeat_and_select": "papernot2022hyperparameter",
    "shuffled": "feldman2021hiding",
}

#: Algorithms of ``dpkit train`` (registry names) → the papers the algorithm implements.
ALGORITHM_KEYS: dict[str, tuple[str, ...]] = {
    "admm": ("ding2020towards",),  # the non-private reference: Ding et al. 2020, eqs. 3-4
    "dp-logreg": ("song2013stochastic", "bassily2014private", "dong2022gaussian"),  # noisy GD, GDP calibration
    "pp-admm": ("ding2020towards",),
    "ipp-admm": ("ding2020towards",),
    "dp-admm": ("huang2019dpadmm",),
    "admm-pvp": ("huang2019dpadmm",),  # Huang et al. 2019, Algorithm 2
    "hetero-admm": ("wang2020privacy",),
    "a-ddp": ("cheng2020adaptive",),
    "dvp-admm": ("zhang2016dual",),
}

#: Data sets of ``dpkit train`` (``config["data"]`` of a train document) → their citation, by name prefix.
DATASET_KEYS: dict[str, tuple[str, ...]] = {
    "adult": ("becker1996adult",),
}


def dataset_keys(name: str | None) -> tuple[str, ...]:
    """The citation of the data set a train document names (``config["data"]``, e.g. ``"adult[104]"``).

    >>> dataset_keys("adult[104]"), dataset_keys("synthetic(n=4000, d=20)"), dataset_keys(None)
    (('becker1996adult',), (), ())
    """
    if not isinstance(name, str):
        return ()
    keys: list[str] = []
    for prefix, cited in DATASET_KEYS.items():
        if name.lower().startswith(prefix):
            keys.extend(cited)
    return tuple(keys)


#: Audit input patterns → the paper that introduced them.
AUDIT_PAIRS_KEYS: dict[str, str] = {
    "statdp": "ding2018detecting",
    "statdp-one": "ding2018detecting",
    "statdp-monotone": "ding2018detecting",
}


#: Built-in mechanisms of ``dpkit audit --mechanism NAME`` → the mechanism's paper.
AUDIT_MECHANISM_KEYS: dict[str, str] = {
    "laplace": "dwork2006calibrating",
    "gaussian": "dwork2006our",
    "exponential": "mcsherry2007mechanism",
    "svt": "lyu2017understanding",
    "above-threshold": "lyu2017understanding",
}


def event_kinds(event: Mapping) -> set[str]:
    """All ``kind`` values in a serialised event tree (``PrivacyEvent.to_dict()``)."""
    kinds: set[str] = set()
    stack = [event]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            if "kind" in node:
                kinds.add(str(node["kind"]))
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return kinds


def keys_for(
    *,
    accountings: Iterable[Mapping] = (),
    events: Iterable[Mapping] = (),
    algorithms: Iterable[str] = (),
    audits: Iterable[Mapping] = (),
    datasets: Iterable[str | None] = (),
) -> list[str]:
    """The sorted entry keys a report's numbers depend on.

    Parameters
    ----------
    accountings
        ``AccountingResult.to_dict()``-like mappings of every privacy number the report shows;
        their ``references`` are cited.
    events
        Serialised privacy events that were accounted (their mechanisms and their subsampling).
    algorithms
        ``dpkit train`` algorithm names.
    audits
        Audit result mappings (``references``, ``pairs``, and ``mechanism_name``: the
        ``--mechanism`` option of ``dpkit audit``).
    datasets
        Data set names of ``dpkit train`` documents (``config["data"]``).

    Examples
    --------
    >>> keys_for(accountings=[{"accountant": "gdp", "references": ["dong2022gaussian"]}],
    ...          events=[{"kind": "gaussian", "sigma": 1.0, "sensitivity": 1.0}])
    ['dong2022gaussian', 'dwork2006our']
    """
    cited = [key for result in accountings for key in (result.get("references") or ())]
    cited += [key for audit in audits for key in (audit.get("references") or ())]
    strange = [key for key in cited if not isinstance(key, str) or key not in ENTRIES]
    if strange:  # the "references" of a document's results: data, checked like data
        raise ValueError(f"a document cites {strange[0]!r}, which is not a key of dpkit's bibliography")
    keys: set[str] = set(cited)
    kinds: set[str] = set()
    for event in events:
        kinds |= event_kinds(event)
    keys.update(MECHANISM_KEYS[kind] for kind in kinds if kind in MECHANISM_KEYS)
    for name in algorithms:
        keys.update(ALGORITHM_KEYS.get(name, ()))
    for name in datasets:
        keys.update(dataset_keys(name))
    for audit in audits:
        if audit.get("mechanism_name") in AUDIT_MECHANISM_KEYS:
            keys.add(AUDIT_MECHANISM_KEYS[audit["mechanism_name"]])
        if audit.get("pairs") in AUDIT_PAIRS_KEYS:
            keys.add(AUDIT_PAIRS_KEYS[audit["pairs"]])
    unknown = keys - ENTRIES.keys()
    if unknown:  # a pattern or table pointing nowhere is a bug in this module
        raise KeyError(f"bibliography keys without an entry: {sorted(unknown)}")
    return sorted(keys)


def render_bibtex(keys: Iterable[str]) -> str:
    """The BibTeX file text of ``keys`` (in the given order, each once)."""
    seen: list[str] = []
    for key in keys:
        if key not in ENTRIES:
            raise ValueError(f"unknown bibliography key {key!r}; known keys: {sorted(ENTRIES)}")
        if key not in seen:
            seen.append(key)
    return "\n\n".join(ENTRIES[key] for key in seen) + ("\n" if seen else "")
