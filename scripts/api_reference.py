"""Generate ``docs/api.md``, the API reference, from dpkit's docstrings.

Usage: ``python scripts/api_reference.py`` (writes docs/api.md) or ``--check`` (exit 1 if the file is
out of date; the test suite runs the same comparison, so the reference cannot drift from the code).
For every public module: its summary, then each public class and function defined there with its
signature and the first paragraph of its docstring.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

import dpkit

OUTPUT = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def public_modules() -> list[str]:
    """Names of dpkit's public modules (no part starts with an underscore), sorted."""
    names = ["dpkit"]
    for info in pkgutil.walk_packages(dpkit.__path__, prefix="dpkit."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def first_paragraph(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.split("\n\n")[0].split())


def signature(obj: object) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def module_section(name: str) -> list[str]:
    module = importlib.import_module(name)
    lines = [f"## `{name}`", "", first_paragraph(module) or "(no summary)", ""]
    if name.startswith("dpkit.cli."):
        return lines  # command modules: the command's --help is their reference
    members = [
        (member_name, member)
        for member_name, member in vars(module).items()
        if not member_name.startswith("_")
        and (inspect.isclass(member) or inspect.isfunction(member))
        and getattr(member, "__module__", None) == name
    ]
    for member_name, member in sorted(members):
        kind = "class" if inspect.isclass(member) else "def"
        lines.append(f"- **`{kind} {member_name}{signature(member)}`**  ")
        lines.append(f"  {first_paragraph(member) or '(undocumented)'}")
    if members:
        lines.append("")
    return lines


def render() -> str:
    lines = [
        "# API reference",
        "",
        "Generated from the docstrings by `scripts/api_reference.py`; do not edit by hand.",
        "The test suite fails when this page and the code disagree (regenerate with `python scripts/api_reference.py`).",
        "",
    ]
    for name in public_modules():
        lines.extend(module_section(name))
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/api.md is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT} is out of date: run python scripts/api_reference.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
