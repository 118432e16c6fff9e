"""How ``dpkit audit`` shows a result (:func:`print_result`): p-values, the witness pair, the pass
line, the sequential stopping lines, and the run-time estimate.

p-values. A p-value at or below :data:`P_VALUE_FLOOR` is shown as ``p < 1e-15``: the audit
computes it by bisection on the level α of the confirmation's bound, which cannot go below the
1e-16 its Poisson sample sizes spend on their cap (nor resolve α below double-precision spacing
near 1), so the number there is a floor of the computation (an upper bound of the true p-value),
not its value. The JSON keeps the number and adds ``"p_value_floor": true``.

Inputs. Both inputs of the witness pair are shown as lists of numbers (the JSON has them in
full); long inputs are shortened in the text.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any, Mapping

from dpkit.audit import Pair
from dpkit.commands import strict_json
from dpkit.commands.audit.pairs import describe_change

__all__ = ["P_VALUE_FLOOR", "format_duration", "format_input", "format_p_value", "format_samples",
           "estimate_line", "pass_line", "print_result", "sequential_lines", "witness_lines"]

P_VALUE_FLOOR = 1e-15
"""p-values at or below this are shown as ``< 1e-15`` (see the module docstring)."""

SHOWN_ENTRIES = 12
"""Entries of a witness input shown in the text output before it is shortened."""


def format_p_value(p: float) -> str:
    """``"p = 0.0123"``, or ``"p < 1e-15"`` at the floor of the computation.

    >>> format_p_value(0.0123), format_p_value(4.440892098500626e-16)
    ('p = 0.0123', 'p < 1e-15')
    """
    return f"p < {P_VALUE_FLOOR:g}" if p <= P_VALUE_FLOOR else f"p = {p:.3g}"


def _number(x: Any) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def format_input(values: Any, shown: int = SHOWN_ENTRIES) -> str:
    """A witness input (a JSON list, possibly nested) as text, shortened after ``shown`` entries.

    >>> format_input([1.0, 1.0, 2.0]), format_input(list(range(20)), shown=3)
    ('[1, 1, 2]', '[0, 1, 2, ... (20 entries)]')
    """
    if not isinstance(values, list):
        return json.dumps(values)
    head = [format_input(v, shown) if isinstance(v, list) else _number(v) for v in values[:shown]]
    more = f", ... ({len(values)} entries)" if len(values) > shown else ""
    return "[" + ", ".join(head) + more + "]"


def witness_lines(witness: Mapping[str, Any], change: str | None) -> list[str]:
    """The witness: the pair (label, what it changes, both inputs), the event and its counts."""
    if "pair" not in witness:
        return [f"witness: {witness.get('note', 'none')}"]
    pair, event = witness["pair"], witness.get("event", {})
    lines = [f"witness pair {pair['label']}" + (f": {change}" if change else ""),
             f"  D  = {format_input(pair['first'])}",
             f"  D' = {format_input(pair['second'])}"]
    if "count_numerator" in witness:
        where = f" on {event['feature']}" if event.get("feature") else ""
        lines.append(f"  event: {event.get('family')} ({event.get('shape')}){where}; {witness['direction']}: counts "
                     f"{witness['count_numerator']} vs {witness['count_denominator']} of "
                     + (f"{witness['outputs_numerator']} vs {witness['outputs_denominator']} outputs (Poisson sizes, "
                        f"capped at {witness['samples_per_input']})" if "outputs_numerator" in witness
                        else f"{witness['samples_per_input']} per input"))
    elif "count_first" in witness:  # a floating-point witness: one output value
        lines.append(f"  event: {str(event.get('description', event)).rstrip('.')}; seen {witness['count_first']} times on D, "
                     f"{witness['count_second']} on D'")
    return lines


def pass_line(detectable: float | None, confidence: float) -> str | None:
    """On a pass, what the audit could have seen (``AuditResult.detectable_epsilon``), or ``None``.

    >>> pass_line(1.07, 0.95).split(" (")[0]
    'on its witness event, this audit would have detected epsilon above 1.07 with probability 0.95'
    """
    if detectable is None:
        return None
    if not math.isfinite(detectable):
        return ("on its witness event, no epsilon was detectable at this budget (the event is too rare); "
                "use more --samples")
    return (f"on its witness event, this audit would have detected epsilon above {detectable:.4g} with probability "
            f"{confidence:g} (a power estimate at the event's observed frequency, not a confidence bound; other "
            f"events and pairs are not covered)")


def sequential_lines(stopping_samples: int | None, stopped_early: bool, violation: bool, samples: int) -> list[str]:
    """Where a sequential audit stopped, and, if it stopped early on a pass, how to look further."""
    if stopping_samples is None:
        return []
    lines = [f"sequential: stopped after {stopping_samples} outputs per input"
             + (" (early)" if stopped_early else " (the whole budget)")]
    if not violation:
        why = ("no candidate event could still refute the claim at this budget" if stopped_early
               else "the budget was spent without refuting the claim")
        lines.append(f"sequential: {why}; to look further, run a new audit with more samples and another seed (e.g. "
                     f"--samples {10 * samples} "
                     f"--seed N); each audit has its own 1 - confidence chance of a false alarm, so correct for "
                     f"repeated audits of one claim")
    return lines


def format_samples(n: int) -> str:
    """``10^7`` for a power of ten, else ``1,234,567``.

    >>> format_samples(10_000_000), format_samples(123_456)
    ('10^7', '123,456')
    """
    k = round(math.log10(n)) if n > 0 else 0
    return f"10^{k}" if n >= 1000 and 10**k == n else f"{n:,}"


def format_duration(seconds: float) -> str:
    """``"~40 s"``, ``"~6 min"``, ``"~2.5 h"``.

    >>> format_duration(40.2), format_duration(361), format_duration(9000)
    ('~40 s', '~6 min', '~2.5 h')
    """
    if seconds < 90:
        return f"~{max(seconds, 1):.0f} s"
    if seconds < 90 * 60:
        return f"~{seconds / 60:.0f} min"
    return f"~{seconds / 3600:.2g} h"


def estimate_line(seconds_total: float, samples: int | None, workers: int | None) -> str:
    """The run-time warning printed on stderr (``workers``: ``--workers``, ``None`` when the audit chooses).

    >>> estimate_line(361, 10**7, 2)
    'dpkit audit: ~6 min at this rate for 10^7 samples; use --samples to lower it'
    """
    pinned_serial = workers is not None and workers <= 1
    advice = "use --samples to lower it" + (", or --workers N to run batches in parallel" if pinned_serial else "")
    size = f"{format_samples(samples)} samples" if samples else "this audit"
    return f"dpkit audit: {format_duration(seconds_total)} at this rate for {size}; {advice}"


def print_result(args: argparse.Namespace, result: Any, description: str, pairs_name: str, relation: str,
                 search: dict[str, Any] | None = None, digest: str | None = None) -> None:
    """Print a mechanism audit's result: text, or one JSON object with ``--json``.

    The JSON is ``result.to_dict()`` plus ``mechanism``, ``pairs`` (their name or source),
    ``pairs_sha256`` (the user's own pairs), ``relation``, ``witness_change``,
    ``p_value_floor`` and, with ``--search``, ``search``.
    """
    witness = result.witness
    if search is not None and "pair" in witness:  # the confirmed pair is the one the search found
        witness = dict(witness, pair=dict(witness["pair"], label=search["pair_label"]))
    change = describe_change(Pair(witness["pair"]["first"], witness["pair"]["second"], "")) if "pair" in witness else None
    if args.json:
        out = result.to_dict()
        if search is not None and "pair" in out["witness"]:
            out["witness"]["pair"]["label"] = search["pair_label"]
        out["mechanism"] = description
        out["pairs"] = pairs_name
        if digest is not None:
            out["pairs_sha256"] = digest
        out["relation"] = relation
        out["witness_change"] = change
        out["p_value_floor"] = result.p_value <= P_VALUE_FLOOR
        if search is not None:
            out["search"] = search
        print(strict_json.dumps(out))
        return
    verdict = "VIOLATION: claim refuted" if result.violation else "no violation found"
    if result.violation and getattr(result, "assumption", None):
        verdict = "VIOLATION under the stated assumption: claim refuted if the assumption holds"
    print(f"{description}: claimed ({args.claimed_epsilon:g}, {args.claimed_delta:g})-DP")
    print(f"neighbouring relation: {relation}")
    if search is not None:
        print(f"search: {search['evaluated']} candidate pairs in {search['rounds']} rounds on {search['samples']} "
              f"outputs; best {search['pair_label']} with screening estimate {search['screening_estimate']:.4f} "
              f"(chosen on the search samples: not a certified bound); confirmed below on fresh outputs")
    print(f"epsilon lower bound {result.epsilon_lower_bound:.4f} at confidence {result.confidence:g} "
          f"({format_p_value(result.p_value)}): {verdict}")
    assumption = getattr(result, "assumption", None)
    if assumption:
        print(f"assumption: {assumption}")
    power = pass_line(getattr(result, "detectable_epsilon", None), result.confidence)
    if power is not None:
        print(power)
    for line in witness_lines(witness, change):
        print(line)
    stopped_early = "stopped early" in result.method
    for line in sequential_lines(getattr(result, "stopping_samples", None), stopped_early, result.violation,
                                 result.samples):
        print(line)
    for note in result.notes:
        shown = (power is not None and note.startswith("pass: ")) or (assumption and note.endswith(assumption))
        if not shown:  # the pass and assumption notes are the lines above
            print(f"note: {note}")
    searched = f" (after {search['samples']} for the search)" if search is not None else ""
    print(f"{result.samples} samples in {result.seconds:.1f} s{searched}")
