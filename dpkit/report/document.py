"""Input documents of a report: the JSON objects that ``dpkit <command> --json`` prints.

Every such object carries a provenance envelope under ``"dpkit"`` (command, argv, config,
config_hash, environment; see :mod:`dpkit.commands.runner`). :func:`load_document` reads and checks
one, so that a report never silently works from a file it does not understand.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from dpkit.commands import strict_json
from dpkit.commands.provenance import config_hash

#: Commands whose output a report understands, and the result fields each must carry.
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "epsilon": ("delta", "event"),
    "calibrate": ("epsilon", "delta", "parameter", "parameter_name", "neighbouring", "mechanism", "count", "sampling", "event"),
    "train": ("algorithm", "variant", "accuracy", "delta", "guarantee", "paper_claim", "extra_guarantees", "ledger",
              "config"),
    "audit": ("epsilon_lower_bound", "violation", "claimed_epsilon", "claimed_delta", "confidence", "samples", "method"),
    "dpsgd": ("examples", "batch", "epochs", "delta", "sampling_rate", "steps", "noise_multiplier"),
}
ENVELOPE_FIELDS = ("command", "argv", "config", "config_hash", "environment")

#: Deepest nesting of arrays and objects a document may have (dpkit's own documents need 6).
MAX_DEPTH = 64


def nesting_depth_exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests arrays/objects more than ``limit`` levels deep (iterative: no recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, tuple, dict)):
            if depth >= limit:
                return True
            stack.extend((inner, depth + 1) for inner in (item.values() if isinstance(item, dict) else item))
    return False


@dataclass(frozen=True)
class Document:
    """One checked input document.

    Attributes
    ----------
    source
        Where it came from (a path, or ``"<dict>"``).
    command
        The dpkit command that produced it (``epsilon``, ``calibrate``, ``train`` or ``audit``).
    payload
        The whole JSON object, envelope included.
    """

    source: str
    command: str
    payload: Mapping[str, Any]

    @property
    def envelope(self) -> Mapping[str, Any]:
        """The provenance block (``payload["dpkit"]``)."""
        return self.payload["dpkit"]

    @property
    def argv(self) -> list[str]:
        return list(self.envelope["argv"])

    @property
    def config(self) -> Mapping[str, Any]:
        return self.envelope["config"]

    @property
    def config_hash(self) -> str:
        return str(self.envelope["config_hash"])

    @property
    def config_hash_valid(self) -> bool:
        """Whether the stored hash is the SHA-256 of the stored configuration (a hand edit breaks it)."""
        return config_hash(self.config) == self.config_hash


def document_from_dict(data: Any, source: str = "<dict>") -> Document:
    """Check a parsed JSON object and wrap it as a :class:`Document`.

    Raises
    ------
    ValueError
        If ``data`` is not a dpkit JSON object (no ``"dpkit"`` envelope), comes from a command
        a report cannot use, or lacks a field the report needs.
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"{source}: expected a JSON object, got {type(data).__name__}")
    if nesting_depth_exceeds(data):
        raise ValueError(f"{source}: arrays and objects nested deeper than {MAX_DEPTH} levels; not a dpkit document")
    data = read_numbers(data)
    envelope = data.get("dpkit")
    if not isinstance(envelope, Mapping):
        raise ValueError(
            f"{source}: not a dpkit JSON document (no \"dpkit\" provenance block); "
            "create it with `dpkit epsilon|calibrate|train|audit|dpsgd ... --json > FILE.json`"
        )
    missing = [field for field in ENVELOPE_FIELDS if field not in envelope]
    if missing:
        raise ValueError(f"{source}: the \"dpkit\" block lacks {missing}")
    command = envelope["command"]
    if command not in REQUIRED_FIELDS:
        raise ValueError(f"{source}: command must be one of {sorted(REQUIRED_FIELDS)}, got command={command!r}")
    if not isinstance(envelope["argv"], list) or not all(isinstance(a, str) for a in envelope["argv"]):
        raise ValueError(f"{source}: \"dpkit\".argv must be a list of strings")
    if command == "epsilon" and "results" not in data and "epsilon" not in data:  # --compare prints "results"
        raise ValueError(f"{source}: an epsilon document needs \"epsilon\" or \"results\"")
    if command == "train" and "guarantees" in data and "guarantee" not in data:
        raise ValueError(f"{source}: a train document in the old format (\"guarantees\", a bare ledger list); "
                         "recreate it with the current `dpkit train ... --json`")
    missing = [field for field in REQUIRED_FIELDS[command] if field not in data]
    if missing:
        raise ValueError(f"{source}: a {command} document needs the fields {missing}")
    if command == "train":
        _check_train(data, source)
    if command == "dpsgd" and not all(isinstance(data.get(name), Mapping) for name in ("poisson", "shuffled")) \
            and not _calibrated(data):
        raise ValueError(f"{source}: a dpsgd document needs \"poisson\" and \"shuffled\" (a privacy statement) or "
                         "a calibrated noise multiplier per accountant (\"rdp\" and \"pld\", or those its "
                         "\"accountants\" list names)")
    return Document(source=source, command=command, payload=data)


def read_numbers(payload: Mapping[str, Any]) -> dict[str, Any]:
    """``payload`` with its non-finite numbers (``"inf"``, ``"-inf"``, ``"nan"``, see
    :mod:`dpkit.commands.strict_json`) read back as floats; the ``"dpkit"`` envelope is kept as
    written (its configuration is what the hash covers). Documents with ``Infinity`` tokens (dpkit
    before strict JSON) already hold floats and are unchanged."""
    return {key: value if key == "dpkit" else strict_json.decode(value) for key, value in payload.items()}


def _calibrated(data: Mapping[str, Any]) -> bool:
    """Whether a dpsgd document holds a calibration: one result per accountant it lists ("rdp" and "pld"
    in documents written before ``--batching``)."""
    names = data.get("accountants", ("rdp", "pld"))
    return isinstance(names, (list, tuple)) and bool(names) and all(
        isinstance(name, str) and isinstance(data.get(name), Mapping) for name in names)


def _check_train(data: Mapping[str, Any], source: str) -> None:
    """The shapes a report reads from a train document (``TrainingResult.to_dict()``)."""
    ledger = data["ledger"]
    if not isinstance(ledger, Mapping) or not isinstance(ledger.get("groups"), list) or "neighbouring" not in ledger:
        raise ValueError(f"{source}: a train document's \"ledger\" must be {{\"neighbouring\": ..., \"groups\": [...]}}")
    for group in ledger["groups"]:
        if not isinstance(group, Mapping) or not isinstance(group.get("agents"), list) \
                or not isinstance(group.get("events"), list) \
                or not all(isinstance(item, list) and len(item) == 2 for item in group["events"]):
            raise ValueError(f"{source}: every ledger group needs \"agents\" and \"events\" ([event, count] pairs)")
    for name in ("guarantee", "paper_claim"):
        if data[name] is not None and not isinstance(data[name], Mapping):
            raise ValueError(f"{source}: \"{name}\" must be an object or null")
    if not isinstance(data["extra_guarantees"], Mapping) or not all(
            isinstance(v, Mapping) for v in data["extra_guarantees"].values()):
        raise ValueError(f"{source}: \"extra_guarantees\" must map names to accounting results")
    if not isinstance(data["config"], Mapping):
        raise ValueError(f"{source}: \"config\" must be an object")


def load_document(path: str | Path) -> Document:
    """Read and check the dpkit JSON document at ``path``.

    Raises
    ------
    ValueError
        If the file does not exist, is not JSON, or is not a usable dpkit document.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"document {str(path)!r} does not exist or is not a file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    except RecursionError:
        raise ValueError(f"{path}: arrays and objects nested deeper than {MAX_DEPTH} levels; not a dpkit document") \
            from None
    return document_from_dict(data, str(path))


def as_document(item: Any) -> Document:
    """A :class:`Document` from a path, a parsed JSON mapping, or a Document."""
    if isinstance(item, Document):
        return item
    if isinstance(item, (str, Path)):
        return load_document(item)
    if isinstance(item, Mapping):
        return document_from_dict(item)
    raise TypeError(f"documents must be paths, dicts or Document objects, got {type(item).__name__}")
