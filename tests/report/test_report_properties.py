"""Property tests: Markdown tables stay well-formed; the configuration hash is order-free and sensitive."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from dpkit.report.markdown import down, table, up
from dpkit.commands.provenance import config_hash

cells = st.one_of(st.text(max_size=12), st.floats(allow_nan=False), st.integers(), st.none(), st.booleans())


@given(st.integers(1, 5).flatmap(lambda k: st.lists(st.lists(cells, min_size=k, max_size=k), max_size=4)))
def test_tables_have_consistent_columns(rows):
    width = len(rows[0]) if rows else 2
    rows = rows or []
    text = table([f"h{i}" for i in range(width)], rows)
    lines = text.split("\n")
    assert len(lines) == len(rows) + 2
    assert {len(re.findall(r"(?<!\\)\|", line)) for line in lines} == {width + 1}


@given(st.floats(min_value=0.0, max_value=1e6, allow_nan=False))
def test_rounding_direction(value):
    assert float(up(value)) >= value
    assert float(down(value)) <= value


configs = st.dictionaries(st.text(min_size=1, max_size=6), st.one_of(st.integers(), st.floats(allow_nan=False,
                          allow_infinity=False), st.text(max_size=5), st.none()), min_size=1, max_size=6)


@given(configs, st.data())
def test_config_hash_order_free_and_changes_with_any_value(config, data):
    reordered = dict(reversed(list(config.items())))
    assert config_hash(reordered) == config_hash(config)
    key = data.draw(st.sampled_from(sorted(config)))
    changed = dict(config)
    changed[key] = [config[key]]  # a different JSON value
    assert config_hash(changed) != config_hash(config)
