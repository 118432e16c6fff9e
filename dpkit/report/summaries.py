"""A document's own numbers, labelled by role, and summaries of its ledger, training run and audit."""

from __future__ import annotations

from typing import Any, Mapping

from dpkit.report.document import Document
from dpkit.report.ledger_accounting import train_groups

# ---------------------------------------------------------------------------------------------
# The document's own numbers


RESULT_KEYS = ("epsilon", "delta", "accountant", "neighbouring", "method", "is_upper_bound", "epsilon_lower", "notes",
               "references")


def analyses(doc: Document) -> list[dict[str, Any]]:
    """The document's privacy numbers, each labelled by its role.

    ``certified``: an accountant's upper bound (for ``train``, the tightest accountant over the
    run's ledger); ``paper claim``: the paper's own claim for the run, which may not be a valid
    bound (``valid`` says); ``extra guarantee``: a further accountant result of a train run,
    labelled by its name (e.g. ``label_only``).
    """
    payload = doc.payload
    if doc.command == "train":
        rows = []
        guarantee = payload["guarantee"]
        if guarantee is not None:
            rows.append({"analysis": "guarantee", "role": "certified", **{k: guarantee.get(k) for k in RESULT_KEYS}})
        claim = payload["paper_claim"]
        if claim is not None:
            rows.append({"analysis": "paper_claim", "role": "paper claim", "epsilon": claim.get("epsilon"),
                         "delta": claim.get("delta"), "accountant": None, "method": claim.get("rule"),
                         "valid": claim.get("valid"), "notes": list(claim.get("notes") or []), "references": []})
        for name, extra in payload["extra_guarantees"].items():
            rows.append({"analysis": name, "role": "extra guarantee", **{k: extra.get(k) for k in RESULT_KEYS}})
        return rows
    if doc.command == "epsilon" and "results" in payload:
        return [{"analysis": r["accountant"], "role": "certified", **r} for r in payload["results"]]
    if doc.command in ("epsilon", "calibrate"):
        return [{"analysis": "reported", "role": "certified", **{k: payload.get(k) for k in RESULT_KEYS}}]
    if doc.command == "dpsgd":
        return dpsgd_analyses(payload)
    return []


_BATCHING_LABELS = {"poisson": "Poisson sampling", "random-allocation": "random allocation",
                    "shuffle": "shuffled batches, any-order bound"}


def dpsgd_analyses(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of a ``dpkit dpsgd`` document: certified ε under Poisson sampling (RDP, PLD) and for any
    data order (each example once per epoch), the shuffled-batch number papers report (an ``assumption``,
    not a proven bound), the user-level rows, or the calibrated noise multipliers."""
    delta = payload["delta"]
    if "poisson" not in payload:  # --epsilon: a calibrated noise multiplier per accountant
        batching = _BATCHING_LABELS[payload.get("batching", "poisson")]
        return [{"analysis": f"noise multiplier {payload[name]['noise_multiplier']:.6g} ({batching})",
                 "role": "certified", "epsilon": payload[name]["epsilon"], "delta": delta, "accountant": name,
                 "method": "smallest noise multiplier meeting the target epsilon, re-checked", "references": []}
                for name in payload.get("accountants", ("rdp", "pld"))]
    poisson, shuffled = payload["poisson"], payload["shuffled"]
    rows = [{"analysis": f"Poisson sampling ({name})", "role": "certified",
             **{k: poisson[name].get(k) for k in RESULT_KEYS}} for name in ("rdp", "pld")]
    rows.append({"analysis": "shuffled batches, as papers report", "role": "assumption",
                 "epsilon": shuffled["epsilon_reported_in_papers"], "delta": delta, "accountant": None,
                 "method": shuffled["assumption"], "references": []})
    rows.append({"analysis": "any data order (once per epoch)", "role": "certified",
                 "epsilon": shuffled["epsilon_once_per_epoch"], "delta": delta, "accountant": "analytic",
                 "method": shuffled["once_per_epoch"], "references": []})
    if "epsilon_lower" in shuffled:
        rows.append({"analysis": "shuffled batches, certified lower bound", "role": "lower bound",
                     "epsilon": shuffled["epsilon_lower"], "delta": delta, "accountant": None,
                     "method": shuffled["lower"], "references": []})
    allocation = payload.get("random_allocation")
    if isinstance(allocation, Mapping):
        rows += [{"analysis": f"random allocation ({name})", "role": "certified",
                  **{k: allocation[name].get(k) for k in RESULT_KEYS}} for name in ("rdp", "pld")]
    user = payload.get("user_level")
    if isinstance(user, Mapping):
        k = payload.get("max_examples_per_user")
        for name, label in (("rdp", "Poisson sampling (rdp)"), ("once_per_epoch", "any data order")):
            rows.append({"analysis": f"user level, {k} examples per user: {label}", "role": "certified",
                         "epsilon": user[f"epsilon_{name}"], "delta": user[f"delta_{name}"],
                         "accountant": "rdp" if name == "rdp" else "analytic", "method": user.get("method"),
                         "references": []})
    return rows


_EVENT_NAMES = {
    "gaussian": "Gaussian", "laplace": "Laplace", "discrete_gaussian": "discrete Gaussian",
    "discrete_laplace": "discrete Laplace", "randomized_response": "randomized response", "pure_dp": "pure DP",
    "approx_dp": "approximate DP", "zcdp": "zCDP", "objective_perturbation": "objective perturbation",
    "exponential_mechanism": "exponential mechanism", "sparse_vector": "sparse vector",
}


def describe_event(event: Mapping[str, Any]) -> str:
    """One readable line of a serialised privacy event.

    >>> describe_event({"kind": "gaussian", "sigma": 2.0, "sensitivity": 0.5})
    'Gaussian(sigma=2, sensitivity=0.5)'
    >>> describe_event({"kind": "self_composed", "count": 3, "event": {"kind": "laplace", "scale": 1.0, "sensitivity": 1.0}})
    '3 x Laplace(scale=1, sensitivity=1)'
    """
    kind = str(event.get("kind"))
    if kind == "self_composed":
        return f"{event['count']} x {describe_event(event['event'])}"
    if kind in ("composed", "parallel_composed"):
        joiner = " then " if kind == "composed" else " | "
        return "(" + joiner.join(describe_event(e) for e in event["events"]) + ")"
    if kind in ("poisson_sampled", "sampled_without_replacement"):
        inner = describe_event(event["event"])
        if kind == "poisson_sampled":
            return f"{inner} on a Poisson subsample (rate {event['rate']:g})"
        return f"{inner} on {event['sample_size']} of {event['population_size']} records (without replacement)"
    params = []
    for key, value in event.items():
        if key == "kind":
            continue
        params.append(f"{key}={value:.6g}" if isinstance(value, float) else f"{key}={value}")
    return f"{_EVENT_NAMES.get(kind, kind)}({', '.join(params)})"


def ledger_summary(doc: Document) -> list[dict[str, Any]]:
    """The ledger per group of agents (agents with identical entries): its events, counts and releases."""
    return [{"agents": agents, "releases": sum(c for _, c in items),
             "events": [{"event": e, "count": c, "description": describe_event(e)} for e, c in items]}
            for agents, items in train_groups(doc)]


#: Provenance fields of a train run's data and targets (``config`` of the train document).
DATA_FIELDS = ("data", "seed", "n_train", "n_test", "dimension", "agents", "iterations", "epsilon_target",
               "delta_target", "majority_accuracy", "data_read_as", "scaling")


def train_summary(doc: Document) -> dict[str, Any]:
    """What a train document says: variant, certified ε, the paper's claim, extras, accuracy, data, ledger."""
    p = doc.payload
    config = p["config"]
    return {
        "algorithm": p["algorithm"],
        "variant": p["variant"],
        "private": p["guarantee"] is not None,
        "certified": p["guarantee"],
        "paper_claim": p["paper_claim"],
        "extra_guarantees": dict(p["extra_guarantees"]),
        "accuracy": p["accuracy"],
        "majority_accuracy": config.get("majority_accuracy"),
        "agent_accuracies": list(p.get("agent_accuracies") or []),
        "data": {**{key: config.get(key) for key in DATA_FIELDS if key in config},
                 **({"returned model": config["fallback"]["chosen"]} if "fallback" in config else {})},
        "ledger": ledger_summary(doc),
        "neighbouring": p["ledger"].get("neighbouring"),
        "as_executed": as_executed(p["guarantee"] is not None, list(p.get("notes") or [])),
    }


def as_executed(private: bool, notes: list[str]) -> list[str] | None:
    """A private run's "as executed" status from its notes: ``[]`` when every release was private as
    executed, else the note that starts "not private as executed" (the run's
    :data:`~dpkit.algorithms.training.FLOAT_NOTE`, or the older label of a document written before the
    float-safe default) and the notes of the mechanisms that follow it (``None`` for a non-private run)."""
    if not private:
        return None
    first = next((i for i, note in enumerate(notes) if note.startswith("not private as executed")), None)
    return [] if first is None else notes[first:]


def audit_summary(doc: Document) -> dict[str, Any]:
    """The audit's lower bound, confidence, samples and verdict, with the witness' probabilities."""
    p = doc.payload
    confidence = p["confidence"]
    if p["violation"]:
        verdict = (f"VIOLATION: the claim epsilon={p['claimed_epsilon']:g}, delta={p['claimed_delta']:g} is "
                   f"contradicted (epsilon >= {p['epsilon_lower_bound']:.4f} with confidence {confidence:g})")
    else:
        verdict = (f"no violation found: the data support epsilon >= {p['epsilon_lower_bound']:.4f} with confidence "
                   f"{confidence:g}, consistent with the claim epsilon={p['claimed_epsilon']:g}")
    witness = p.get("witness") or {}
    summary = {k: p.get(k) for k in ("epsilon_lower_bound", "violation", "p_value", "claimed_epsilon", "claimed_delta",
                                      "confidence", "samples", "seed", "method", "mechanism", "pairs", "candidates")}
    summary["verdict"] = verdict
    summary["notes"] = list(p.get("notes", []))
    if witness:
        n = witness.get("samples_per_input")
        summary["witness"] = {
            "event": witness.get("event"),
            "direction": witness.get("direction"),
            "pair": (witness.get("pair") or {}).get("label"),
            "samples_per_input": n,
            "p_numerator_estimate": _share(witness["count_numerator"], witness.get("outputs_numerator", n)),
            "p_denominator_estimate": _share(witness["count_denominator"], witness.get("outputs_denominator", n)),
            "p_numerator_lower": witness.get("p_numerator_lower"),
            "p_denominator_upper": witness.get("p_denominator_upper"),
        }
    return summary


def _share(count: int, outputs: int | None) -> float | None:
    """``count / outputs``, or None without outputs."""
    return count / outputs if outputs else None
