"""Render a report (from :func:`dpkit.report.builder.build_report`) as Markdown.

Tables always have as many cells per row as header cells; ``|`` inside a cell is escaped.
ε upper bounds are rounded up and lower bounds down, so a rounded number never claims more
privacy than was computed.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable, Mapping, Sequence


def cell(value: Any) -> str:
    """One table cell: ``-`` for missing, no newlines, ``|`` escaped."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return repr(value)
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text.replace("\n", " ").replace("|", "\\|")


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        row = list(row)
        if len(row) != len(headers):
            raise ValueError(f"table row has {len(row)} cells, expected {len(headers)}")
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    return "\n".join(lines)


def up(value: float | None, digits: int = 4) -> str:
    """``value`` rounded up to ``digits`` decimals (for upper bounds)."""
    if value is None:
        return "-"
    if not math.isfinite(value):
        return str(value)
    scale = 10.0 ** digits
    steps = math.ceil(value * scale)
    while float(f"{steps / scale:.{digits}f}") < value:  # the product may have rounded down
        steps += 1
    return f"{steps / scale:.{digits}f}"


def down(value: float | None, digits: int = 4) -> str:
    """``value`` rounded down to ``digits`` decimals (for lower bounds)."""
    if value is None:
        return "-"
    if not math.isfinite(value):
        return str(value)
    scale = 10.0 ** digits
    steps = math.floor(value * scale)
    while float(f"{steps / scale:.{digits}f}") > value:  # the product may have rounded up
        steps -= 1
    return f"{steps / scale:.{digits}f}"


def agreement(row: Mapping[str, Any]) -> str:
    """``identical``, ``equal within relative tolerance ... (difference ...)`` or ``DIFFERENT``.

    >>> agreement({"identical": False, "matched": True, "document": 1.0, "report": 1.0 + 4e-14, "rtol": 1e-9})
    'equal within relative tolerance 1e-09, not identical (report - document = +3.997e-14)'
    """
    original = row.get("document", row.get("original"))
    new = row.get("report", row.get("rerun"))
    if row.get("identical", original == new):
        return "identical"
    difference = ""
    if isinstance(original, (int, float)) and isinstance(new, (int, float)) and not isinstance(original, bool) \
            and math.isfinite(original) and math.isfinite(new):
        label = "report - document" if "report" in row else "rerun - document"
        difference = f" ({label} = {float(new) - float(original):+.4g})"
    if row.get("matched"):
        return f"equal within relative tolerance {row.get('rtol', 0):g}, not identical{difference}"
    return f"DIFFERENT{difference}"


def _train_section(doc: Mapping[str, Any]) -> list[str]:
    """A train document: variant, certified ε and who certified it, the paper's claim, extras, accuracy, data, ledger."""
    t = doc["train"]
    out = ["### The training run", ""]
    majority = t.get("majority_accuracy")
    accuracy = "-" if t["accuracy"] is None else repr(t["accuracy"])
    out += [f"- **Algorithm:** `{t['algorithm']}`, variant `{t['variant']}`",
            f"- **Test accuracy:** {accuracy} (majority class: {cell(majority)})"]
    certified = t["certified"]
    if certified is None:
        out.append("- **Certified ε:** none — a non-private run, no privacy guarantee")
    else:
        out.append(f"- **Certified ε (record-level, {certified['neighbouring']}):** {up(certified['epsilon'])} "
                   f"at δ = {certified['delta']:g}, certified by the `{certified['accountant']}` accountant "
                   f"(the tightest of dpkit's accountants over the run's ledger)")
        unsafe = t.get("as_executed")
        if unsafe is not None:
            out.append("- **As executed:** " + ("private as executed (every release drew float-safe noise)" if not unsafe
                                                else "**NOT private as executed**: " + "; ".join(cell(n) for n in unsafe)))
    claim = t.get("paper_claim")
    if claim is not None:
        value = "none stated" if claim.get("epsilon") is None else f"ε = {cell(claim['epsilon'])} at δ = {cell(claim.get('delta'))}"
        validity = "a valid bound for this run" if claim.get("valid") else "**NOT a valid bound for this run**"
        out.append(f"- **The paper's claim** ({cell(claim.get('rule'))}): {value}; {validity}")
        out += [f"  - {cell(note)}" for note in claim.get("notes") or []]
    elif certified is not None:
        out.append("- **The paper's claim:** none for this variant")
    for name, extra in t.get("extra_guarantees", {}).items():
        out.append(f"- **Extra guarantee `{cell(name)}`:** ε = {up(extra.get('epsilon'))} at δ = {cell(extra.get('delta'))}, "
                   f"{cell(extra.get('neighbouring'))}, certified by the `{cell(extra.get('accountant'))}` accountant")
    out.append("")
    if t.get("data"):
        out += ["Data and targets:", "", table(["field", "value"], list(t["data"].items())), ""]
    out += ["Ledger (what the mechanisms drew; agents with identical entries are grouped; agents hold disjoint "
            "records, so the run's guarantee is the worst group's):", ""]
    rows = []
    for group in t["ledger"]:
        agents = ", ".join(str(a) for a in group["agents"])
        if not group["events"]:
            rows.append([agents, "no releases", 0, 0])
        for item in group["events"]:
            rows.append([agents, item["description"], item["count"], group["releases"]])
    out += [table(["agents", "event", "count", "releases of the group"], rows), ""]
    return out


def _section(index: int, doc: Mapping[str, Any], plots: Mapping[str, str]) -> list[str]:
    out = [f"## {index}. `dpkit {doc['command']}` — {cell(doc['source'])}", ""]
    out += [
        f"- **Privacy unit:** {doc['privacy_unit']}",
        f"- **Neighbouring relation:** {doc['neighbouring'] or ('see the audit pairs' if doc.get('audit') else '-')}",
        f"- **Seed:** {cell(doc['seed'])}",
        f"- **Configuration hash (SHA-256):** `{doc['config_hash']}`"
        + ("" if doc["config_hash_valid"] else " (**does not match the stored configuration**)"),
        f"- **Command:** `dpkit {' '.join(doc['argv'])}`",
        "",
        *[f"- **{cell(k)}:** {cell(v)}" for k, v in doc.get("result", {}).items()],
        "",
        "### Parameters",
        "",
        table(["parameter", "value"], sorted(doc["parameters"].items())),
        "",
    ]
    if doc.get("train"):
        out += _train_section(doc)
    if doc.get("analyses"):
        out += ["### The document's privacy numbers", "",
                "`certified` rows are an accountant's upper bound; a `paper claim` row restates the paper's own "
                "analysis (valid only where it says so); an `assumption` row holds only under the assumption it states (not a "
                "proven bound); a `lower bound` row is a certified lower bound (neighbouring data sets reach it); "
                "`extra guarantee` rows are further accountant results, "
                "each for the privacy unit its name states.", ""]
        out.append(table(["analysis", "role", "epsilon (rounded up)", "delta", "accountant", "method"],
                         [[a["analysis"], a["role"], up(a.get("epsilon")) if a["role"] not in ("paper claim", "assumption", "lower bound")
                           else cell(a.get("epsilon")), a.get("delta"), a.get("accountant"), a.get("method")]
                          for a in doc["analyses"]]))
        out.append("")
    accounting = doc.get("accounting")
    if accounting and not accounting["at_delta"] and set(accounting["skipped"]) == {"all"}:
        out += ["### Privacy accounting", "", f"Nothing to account: {cell(accounting['skipped']['all'])}.", ""]
        accounting = None
    if accounting:
        out += [f"### ε at δ = {accounting['delta']:g} under each accountant", ""]
        if accounting["at_delta"]:
            out.append(table(["accountant", "epsilon (rounded up)", "epsilon (lower, PLD)", "method", "notes"],
                             [[r["accountant"], up(r["epsilon"]), down(r.get("epsilon_lower")), r["method"],
                               "; ".join(r.get("notes") or [])] for r in accounting["at_delta"]]))
        else:
            out.append("No privacy events: nothing to account.")
        out.append("")
        if accounting["skipped"]:
            out += ["Not applicable:", ""] + [f"- {cell(k)}: {cell(v)}" for k, v in sorted(accounting["skipped"].items())]
            out.append("")
        for note in accounting["notes"]:
            out.append(f"- note: {cell(note)}")
        if accounting["notes"]:
            out.append("")
        profile = accounting.get("profile")
        if profile:
            names = list(profile["deltas"])
            headers = ["epsilon", *[f"delta ({n})" for n in names]] + (["delta (PLD lower)"] if profile["pld_lower"] else [])
            picks = range(0, len(profile["epsilons"]), max(1, len(profile["epsilons"]) // 8))
            rows = []
            for i in picks:
                row = [f"{profile['epsilons'][i]:.4f}", *[f"{profile['deltas'][n][i]:.3e}" for n in names]]
                if profile["pld_lower"]:
                    row.append(f"{profile['pld_lower'][i]:.3e}")
                rows.append(row)
            out += ["### Privacy profile δ(ε) (upper bounds; every point in report.json)", "", table(headers, rows), ""]
        for consistency in doc.get("consistency", []):
            scope = consistency.get("scope", "accountant table")
            other = consistency.get("report_accountant")
            which = "" if other in (None, consistency["accountant"]) else f" (the report's answer came from {other})"
            out.append(f"- Recomputed {consistency['accountant']} ε ({scope}): document {consistency['document']!r}, "
                       f"report {consistency['report']!r}{which} ({agreement(consistency)})")
        if doc.get("consistency"):
            out.append("")
    training = doc.get("training")
    if training:
        kind = "private" if training.get("private", True) else "non-private"
        accuracy = "-" if training["accuracy"] is None else f"{training['accuracy']:.4f}"
        out += ["### Training", "", f"- Test accuracy of the {kind} model: {accuracy}"]
        nonprivate = training.get("nonprivate")
        if nonprivate and nonprivate.get("accuracy") is not None:
            out.append(f"- Non-private baseline (`dpkit {training['nonprivate_argv']}`): accuracy {nonprivate['accuracy']:.4f}")
        out.append("")
    audit = doc.get("audit")
    if audit:
        out += ["### Audit", "", f"**Verdict:** {audit['verdict']}", ""]
        out.append(table(["quantity", "value"], [
            ["epsilon lower bound", down(audit["epsilon_lower_bound"])],
            ["claimed epsilon", audit["claimed_epsilon"]], ["claimed delta", audit["claimed_delta"]],
            ["confidence", audit["confidence"]], ["samples", audit["samples"]], ["p-value", audit["p_value"]],
            ["seed", audit["seed"]], ["mechanism", audit["mechanism"]], ["input pairs", audit["pairs"]],
            ["method", audit["method"]]]))
        out.append("")
    rerun = doc["rerun"]
    out += ["### Rerun check", ""]
    if rerun.get("skipped"):
        out.append(f"**Skipped:** the command imports and runs code the document names "
                   f"({', '.join(f'`{cell(m)}`' for m in rerun['skipped'])}); a report runs it only if the reader "
                   f"trusts it: `dpkit report ... {cell(rerun['allow'])}`.")
    elif not rerun["performed"]:
        out.append("Not performed (`--no-rerun`).")
    elif rerun.get("error"):
        out.append(f"**FAILED:** {cell(rerun['error'])}")
    else:
        verdict = "reproduced" if rerun["matched"] else "**NOT reproduced**"
        out.append(f"Re-executing the command {verdict} the numbers (relative tolerance {rerun['rtol']:g}); "
                   f"configuration hash {'matches' if rerun['config_hash_matched'] else 'DIFFERS'}.")
        for key, (before, after) in rerun.get("config_differences", {}).items():
            out.append(f"- option `{cell(key)}`: document {cell(before)}, rerun {cell(after)}")
        out += ["", table(["number", "document", "rerun", "agreement"],
                          [[f["field"], repr(f["original"]), repr(f["rerun"]), agreement({**f, "rtol": rerun["rtol"]})]
                           for f in rerun["fields"]])]
    out.append("")
    shown = [(name, path) for name, path in plots.items() if path.startswith(f"doc{index}_")]
    for name, path in shown:
        out += [f"![{name}]({path})", ""]
    out += ["References: " + ", ".join(f"[{k}]" for k in doc["references"]), ""]
    return out


def render_markdown(report: Mapping[str, Any], plots: Mapping[str, str] | None = None,
                    skipped_plots: Mapping[str, str] | None = None) -> str:
    """The report as Markdown; ``plots`` maps plot names to PNG paths relative to the report."""
    plots = dict(plots or {})
    env = report["environment"]
    lines = [f"# {report['title']}", ""]
    verdict = {True: "all reruns reproduced their numbers", False: "**some rerun did NOT reproduce its numbers**",
               None: "no rerun performed"}[report["rerun_matched"]]
    failed = sum(bool(doc["rerun"].get("error")) for doc in report["documents"])
    if failed:  # a command that could not run (e.g. an import failed) says nothing about its numbers
        verdict = f"**{failed} rerun(s) FAILED to run** (see each Rerun check)"
    skipped = [doc["rerun"]["skipped"] for doc in report["documents"] if doc["rerun"].get("skipped")]
    if skipped:
        allow = " ".join(f"--trust-module {module}" for module in sorted({m for modules in skipped for m in modules}))
        verdict += (f"; {len(skipped)} rerun(s) skipped because they run code the document names (allow with "
                    f"`{cell(allow)}`)")
    lines += [f"Rerun check: {verdict}.", "", "## Software", "",
              table(["component", "version"], sorted(env.items())), ""]
    for index, doc in enumerate(report["documents"], start=1):
        lines += _section(index, doc, plots)
    shared = [(name, path) for name, path in plots.items() if not path.startswith("doc")]
    if shared or skipped_plots:
        lines += ["## Plots", ""]
        for name, path in shared:
            lines += [f"![{name}]({path})", ""]
        for name, reason in sorted((skipped_plots or {}).items()):
            lines.append(f"- {name} not drawn: {cell(reason)}")
        lines.append("")
    lines += ["## References", "", "BibTeX entries are in `references.bib`: "
              + ", ".join(f"`{k}`" for k in report["references"]), ""]
    return "\n".join(lines)
