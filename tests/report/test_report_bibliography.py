"""BibTeX of dpkit.report: every entry parses under a strict parser; the selection is exact."""

from __future__ import annotations

import re

import pytest

from dpkit.accounting.events import GaussianEvent, LaplaceEvent, PoissonSampledEvent, SampledWithoutReplacementEvent
from dpkit.accounting.gdp import GDPAccountant
from dpkit.accounting.rdp import RDPAccountant
from dpkit.accounting.registry import ACCOUNTANTS, make_accountant
from dpkit.audit import scores
from dpkit.report.bibliography import ENTRIES, keys_for, render_bibtex

REQUIRED = {
    "article": {"author", "title", "journal", "year"},
    "inproceedings": {"author", "title", "booktitle", "year"},
    "misc": {"author", "title", "year"},
}


def parse_bibtex(text: str) -> dict[str, tuple[str, dict[str, str]]]:
    """A strict BibTeX parser: ``@type{key, field = {value}, ...}`` only, balanced braces, unique keys."""
    entries: dict[str, tuple[str, dict[str, str]]] = {}
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i == n:
            return entries
        head = re.compile(r"@([a-z]+)\{([A-Za-z0-9_:-]+),").match(text, i)
        assert head, f"expected '@type{{key,' at offset {i}: {text[i:i + 40]!r}"
        kind, key = head.group(1), head.group(2)
        assert key not in entries, f"duplicate key {key}"
        i = head.end()
        fields: dict[str, str] = {}
        while True:
            while i < n and text[i].isspace():
                i += 1
            assert i < n, f"{key}: unterminated entry"
            if text[i] == "}":
                i += 1
                break
            name = re.compile(r"([a-zA-Z]+)\s*=\s*\{").match(text, i)
            assert name, f"{key}: expected 'field = {{' at {text[i:i + 40]!r}"
            i, depth, start = name.end(), 1, name.end()
            while depth:
                assert i < n, f"{key}: unbalanced braces"
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            value = text[start:i - 1]
            assert name.group(1).lower() not in fields, f"{key}: duplicate field {name.group(1)}"
            assert value.strip(), f"{key}: empty field {name.group(1)}"
            fields[name.group(1).lower()] = value
            while i < n and text[i].isspace():
                i += 1
            if i < n and text[i] == ",":
                i += 1
        entries[key] = (kind, fields)


def test_every_entry_parses_with_required_fields():
    parsed = parse_bibtex(render_bibtex(ENTRIES))
    assert set(parsed) == set(ENTRIES)
    for key, (kind, fields) in parsed.items():
        assert kind in REQUIRED, f"{key}: unexpected type {kind}"
        assert REQUIRED[kind] <= set(fields), f"{key}: missing {REQUIRED[kind] - set(fields)}"
        assert re.fullmatch(r"(19|20)\d\d", fields["year"]), key
        if "doi" in fields:
            assert re.fullmatch(r"10\.\d{4,5}/\S+", fields["doi"]), key
        if "pages" in fields:
            first, last = fields["pages"].split("--")
            assert int(first) < int(last), key


def test_parser_rejects_broken_bibtex():
    with pytest.raises(AssertionError):
        parse_bibtex("@article{x, title = {unterminated}")
    with pytest.raises(AssertionError):
        parse_bibtex("@article{x, title = {unbalanced {brace}}")
    with pytest.raises(AssertionError):
        parse_bibtex("@article{x, title = {a}}\n@article{x, title = {b}}")


def test_render_is_unique_and_ordered():
    text = render_bibtex(["dong2022gaussian", "mironov2017renyi", "dong2022gaussian"])
    assert list(parse_bibtex(text)) == ["dong2022gaussian", "mironov2017renyi"]
    with pytest.raises(ValueError, match="unknown bibliography key"):
        render_bibtex(["nobody2099"])


def test_selection_follows_results_events_algorithms_audits():
    sampled = PoissonSampledEvent(GaussianEvent(1.0), 0.01)
    rdp = RDPAccountant().compose(sampled, 100).get_epsilon(1e-5).to_dict()
    assert keys_for(accountings=[rdp], events=[sampled.to_dict()]) == [
        "balle2020hypothesis", "canonne2020discrete", "dwork2006our", "mironov2017renyi", "mironov2019sampled"]
    # the classic conversion rests on Mironov 2017 alone
    classic = RDPAccountant(conversion="classic").compose(GaussianEvent(1.0)).get_epsilon(1e-5).to_dict()
    assert keys_for(accountings=[classic]) == ["mironov2017renyi"]
    # the same kind of ledger under the GDP accountant cites neither RDP paper nor the subsampling analysis
    laplace = LaplaceEvent(1.0)
    gdp = GDPAccountant().compose(GaussianEvent(1.0)).get_epsilon(1e-5).to_dict()
    assert keys_for(accountings=[gdp], events=[laplace.to_dict()]) == ["dong2022gaussian", "dwork2006calibrating"]
    assert keys_for(algorithms=["dp-admm"]) == ["huang2019dpadmm"]
    assert keys_for(algorithms=["pp-admm", "ipp-admm"]) == ["ding2020towards"]
    audit = {"references": ["clopper1934use"], "pairs": "statdp"}
    assert keys_for(audits=[audit]) == ["clopper1934use", "ding2018detecting"]
    assert keys_for(audits=[{**audit, "mechanism_name": "svt"}]) == [
        "clopper1934use", "ding2018detecting", "lyu2017understanding"]
    assert keys_for() == []


def test_free_text_methods_are_not_parsed():
    assert keys_for(accountings=[{"accountant": "rdp", "method": "Mironov 2017; Balle et al. 2020"}]) == []


def test_unknown_reference_is_refused():
    # a result's "references" may come from a document (data): an unknown or non-string key is refused by name
    with pytest.raises(ValueError, match="nobody2099"):
        keys_for(accountings=[{"references": ["nobody2099"]}])
    with pytest.raises(ValueError, match="not a key"):
        keys_for(audits=[{"references": [["a list"]]}])


@pytest.mark.parametrize("conversion", ["improved", "classic"])
@pytest.mark.parametrize("relation, event, sampling", [
    ("add-remove", GaussianEvent(1.0), None),
    ("add-remove", PoissonSampledEvent(GaussianEvent(1.0), 0.1), "mironov2019sampled"),
    ("replace-one", SampledWithoutReplacementEvent(GaussianEvent(1.0), 10, 100), "wang2019subsampled"),
])
def test_rdp_references_name_the_subsampling_bound(conversion, relation, event, sampling):
    result = RDPAccountant(relation, conversion=conversion).compose(event).get_epsilon(1e-5)
    assert result.references[0] == "mironov2017renyi" and set(result.references) <= ENTRIES.keys()
    assert (sampling in result.references) if sampling else not {"mironov2019sampled", "wang2019subsampled"} & set(
        result.references)


@pytest.mark.parametrize("name", sorted(ACCOUNTANTS))
def test_every_accountant_cites_known_entries(name):
    event = LaplaceEvent(1.0) if name == "approx" else GaussianEvent(2.0)
    for result in (make_accountant(name).compose(event, 3).get_epsilon(1e-5),
                   make_accountant(name).compose(event, 3).get_delta(1.0)):
        assert result.references, f"{name} cites nothing"
        assert set(result.references) <= ENTRIES.keys()


def test_every_audit_reference_exists():
    from_scores = {key for keys in scores._REFERENCES.values() for key in keys}
    assert from_scores <= ENTRIES.keys()
    assert {"clopper1934use", "przyborowski1940homogeneity", "bichsel2021dpsniper"} <= ENTRIES.keys()  # api._references


def test_every_algorithm_cites_its_papers_through_the_table():
    from dpkit.algorithms.registry import ALGORITHMS
    from dpkit.report.bibliography import ALGORITHM_KEYS

    expected = {
        "admm": ("ding2020towards",), "pp-admm": ("ding2020towards",), "ipp-admm": ("ding2020towards",),
        "dp-admm": ("huang2019dpadmm",), "admm-pvp": ("huang2019dpadmm",), "hetero-admm": ("wang2020privacy",),
        "a-ddp": ("cheng2020adaptive",), "dvp-admm": ("zhang2016dual",),
        "dp-logreg": ("song2013stochastic", "bassily2014private", "dong2022gaussian"),
    }
    assert ALGORITHM_KEYS == expected
    assert set(ALGORITHM_KEYS) == set(ALGORITHMS)  # every registered algorithm, nothing deleted (no dvp-pvp)
    for name, keys in ALGORITHM_KEYS.items():
        assert keys_for(algorithms=[name]) == sorted(set(keys))
    assert keys_for(algorithms=["dvp-pvp"]) == []


def test_dataset_citation():
    from dpkit.report.bibliography import dataset_keys

    kind, fields = parse_bibtex(render_bibtex(["becker1996adult"]))["becker1996adult"]
    assert kind == "misc" and fields["doi"] == "10.24432/C5XW20" and fields["note"] == "CC BY 4.0"
    assert fields["author"] == "Becker, Barry and Kohavi, Ronny" and fields["year"] == "1996"
    assert fields["howpublished"] == "UCI Machine Learning Repository"
    for name in ("adult[104]", "adult[124]", "adult"):
        assert keys_for(datasets=[name]) == ["becker1996adult"] == list(dataset_keys(name))
    for name in ("synthetic(n=4000, d=20)", "fair (statsmodels)", None):
        assert keys_for(datasets=[name]) == []
