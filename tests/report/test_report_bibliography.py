"""BibTeX of dpkit.report: every entry parses under a strict parser; the selection is exact."""

from __future__ import annotations

import re

import pytest

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


def test_selection_follows_methods_events_algorithms_audits():
    rdp = {"accountant": "rdp",
           "method": "RDP to (ε, δ), improved conversion (Balle et al. 2020 Thm 21; Canonne, Kamath & Steinke 2020 Prop. 12)"}
    sampled = {"kind": "poisson_sampled", "rate": 0.01, "event": {"kind": "gaussian", "sigma": 1.0, "sensitivity": 1.0}}
    assert keys_for(accountings=[rdp], events=[sampled]) == [
        "balle2020hypothesis", "canonne2020discrete", "dwork2006our", "mironov2017renyi", "mironov2019sampled"]
    # the same ledger under the GDP accountant cites neither RDP paper nor the subsampling analysis
    gdp = {"accountant": "gdp", "method": "exact mu-GDP composition (Dong, Roth & Su 2022, Cor. 3.3)"}
    assert keys_for(accountings=[gdp], events=[{"kind": "laplace", "scale": 1.0, "sensitivity": 1.0}]) == [
        "dong2022gaussian", "dwork2006calibrating"]
    assert keys_for(algorithms=["dp-admm"]) == ["huang2019dpadmm"]
    assert keys_for(algorithms=["pp-admm", "ipp-admm"]) == ["ding2020towards"]
    audit = {"method": "one-sided Clopper-Pearson; Bonferroni", "pairs": "statdp",
             "witness": {"event": {"family": "interval"}}}
    assert keys_for(audits=[audit]) == ["clopper1934use", "ding2018detecting"]
    assert keys_for(audits=[{**audit, "mechanism_name": "svt"}]) == [
        "clopper1934use", "ding2018detecting", "lyu2017understanding"]
    assert keys_for() == []
