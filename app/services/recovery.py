"""Recoverability jobs: what to run, the shard that runs it, and the results the app keeps.

A recoverability job asks, for a pair (base -> post) and a text corpus, how much of the post model's
loss rise on that text a context-free correction of its logits takes back (the analysis itself is
``app/analysis/recoverability_fitting.py``; the worker's torch side is
``worker/recoverability_scoring.py``). It is one shard of kind ``recover`` in the same shard
machinery as evaluations (queue, heartbeat, retry, cancel), run by the same Celery task; the worker
uploads the per-document loss sums and the fitted corrections, and **the app recomputes every share
and its bootstrap interval from those sums** (:func:`summarize`), so what is shown is exactly what
the exported table gives.

The known-answer controls (planted bias, doubled logits, Gaussian noise on the output weights) run
beside every pair on the base model: their shares are stored and shown next to the pair's.
"""

from __future__ import annotations

import math
from typing import Any

from forgetmap.analysis.recoverability_fitting import ALL_CORRECTIONS, KINDS, SPLITS
from forgetmap.analysis.recoverability_shares import (
    bootstrap_shares,
    loss_column,
    shares_from_sums,
    table_models,
)
from forgetmap.contract.jobs import ShardKind
from forgetmap.contract.recovery import MAX_TABLE_DOCS, RecoverJobIn, RecoveryIn, RecoveryShardSpec
from forgetmap.core.errors import InputError
from forgetmap.core.recoverability_names import CONTROLS
from forgetmap.db import recoverability as store
from forgetmap.db.pairing import add_pair
from forgetmap.db.queries import pair_id_by_names
from forgetmap.db.store import Connection
from forgetmap.services.jobs import one_shard_job, register_models

# what a pair's share is read against: damage that is neither a bias nor a temperature
YARDSTICK = "weight_noise"
MODEL_ROLES = ("base", "post", *CONTROLS)


def create_recovery_job(conn: Connection, request: RecoverJobIn) -> tuple[int, list[int]]:
    """Write a recoverability job (one shard) and its pair; returns (job id, shard ids to send).

    A finished analysis with the same models, corpus and settings is reused, not run again.
    """
    request.check()
    register_models(conn, [request.base, request.post])
    pair_id, _, _ = add_pair(
        conn, request.base.name, request.post.name, label=request.label, stage=request.stage
    )
    return one_shard_job(
        conn,
        kind=ShardKind.recover,
        payload=request.payload(),
        spec=request.shard_spec().model_dump(mode="json"),
        model=request.post.name,
        benchmark=f"recover:{request.corpus.source}",
        seed=request.options.seed,
        pair_id=pair_id,
    )


# ------------------------------------------------------------------------------ results


def check_table(table: dict[str, list], controls: tuple[str, ...] | list[str]) -> None:
    """Refuse an uploaded per-document table that cannot be the analysis' output."""
    for column in ("doc_id", "split", "n_tokens"):
        if column not in table:
            raise InputError(f"the document table has no {column!r} column")
    n = len(table["doc_id"])
    if n < 3:
        raise InputError("the document table needs at least 3 documents")
    if n > MAX_TABLE_DOCS:
        raise InputError(f"the document table has {n} documents; at most {MAX_TABLE_DOCS}")
    for column, values in table.items():
        if not isinstance(values, list) or len(values) != n:
            raise InputError(f"column {column!r} does not have one value per document ({n})")
    bad_split = {s for s in table["split"]} - set(SPLITS)
    if bad_split:
        raise InputError(f"unknown split {sorted(bad_split)[0]!r}; splits are {', '.join(SPLITS)}")
    if "eval" not in table["split"]:
        raise InputError("the document table has no EVAL documents")
    if any(not isinstance(t, int) or isinstance(t, bool) or t < 1 for t in table["n_tokens"]):
        raise InputError("n_tokens must be positive integers")
    models = table_models(table)
    extra = [c for c in table if c not in ("doc_id", "split", "n_tokens") and "/" not in c]
    if extra:
        raise InputError(f"unexpected column {extra[0]!r} (loss columns are 'model/correction')")
    for role in ("base", "post", *controls):
        if role not in models or "none" not in models[role]:
            raise InputError(f"the document table has no uncorrected losses for {role!r}")
    for model, corrections in models.items():
        if model not in MODEL_ROLES:
            raise InputError(f"unknown model {model!r} in the document table")
        for c in corrections:
            if c not in ALL_CORRECTIONS:
                raise InputError(f"unknown correction {c!r} for {model!r}")
            values = table[loss_column(model, c)]
            if any(
                not isinstance(v, (int, float))
                or isinstance(v, bool)
                or not math.isfinite(v)
                or v < 0
                for v in values
            ):
                raise InputError(f"column {model}/{c} must hold finite, non-negative loss sums")


def finite_or_none(value: Any) -> Any:
    """JSON-safe copy: NaN and infinities (a zero gap) become None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(v) for v in value]
    return value


def summarize(table: dict[str, list], *, n_boot: int, seed: int) -> dict[str, Any]:
    """Shares of the post model and of every control against the base, recomputed from the
    per-document loss sums: on EVAL with bootstrap intervals, and in-sample on FIT."""
    shares, in_sample = {}, {}
    for model in table_models(table):
        if model == "base":
            continue
        shares[model] = bootstrap_shares(table, n_boot=n_boot, seed=seed, base="base", post=model)
        in_sample[model] = shares_from_sums(table, base="base", post=model, split="fit")
    return finite_or_none({"shares": shares, "in_sample": in_sample})


def store_upload(conn: Connection, shard: dict, upload: RecoveryIn) -> int:
    """Check and keep a shard's recoverability results (replacing an earlier upload of the same
    shard, so a repeated delivery is harmless); returns the recovery id."""
    spec = RecoveryShardSpec.model_validate(shard["spec"])
    options = spec.options
    check_table(upload.table, options.controls)
    pair_id = pair_id_by_names(conn, spec.base.name, spec.post.name)
    if pair_id is None:
        raise InputError("the pair of this recoverability shard no longer exists")
    summary = summarize(upload.table, n_boot=options.n_boot, seed=options.seed)
    summary.update(
        corrections=finite_or_none(upload.corrections),
        controls=finite_or_none(upload.controls),
        timing=finite_or_none(upload.timing),
    )
    parts = spec.model_dump(mode="json")
    config = {
        **finite_or_none(upload.config),
        "corpus": parts["corpus"],
        "options": parts["options"],
        "base": parts["base"],
        "post": parts["post"],
        "config_hash": shard["config_hash"],
    }
    return store.save_recovery(
        conn,
        pair_id=pair_id,
        shard_id=shard["id"],
        corpus=spec.corpus.source,
        config=config,
        summary=summary,
        table=upload.table,
    )


# ------------------------------------------------------------------------------ reading


CORRECTION_LABELS = {
    "bias": "bias",
    "temp": "temperature",
    "bias_temp": "bias + temperature",
    "closed_bias": "closed-form bias",
}
ROLE_LABELS = {
    "post": "post-trained model",
    "weight_noise": "control: noise on the output weights",
    "planted_bias": "control: planted output bias",
    "doubled_logits": "control: doubled logits",
}


def view_rows(recovery: dict) -> list[dict]:
    """One row per (model, correction) for the pair page: share and symmetric share with their
    intervals, the fitted temperature, and the loss gap they divide."""
    summary = recovery["summary"]
    rows: list[dict] = []
    for role in ("post", YARDSTICK, "planted_bias", "doubled_logits"):
        s = summary["shares"].get(role)
        if s is None:
            continue
        fitted = summary.get("corrections", {}).get(role, {})
        for kind in KINDS:
            if kind not in s["share"]:
                continue
            rows.append(
                {
                    "first": not rows or rows[-1]["role"] != role,
                    "role": role,
                    "role_label": ROLE_LABELS[role],
                    "correction": kind,
                    "correction_label": CORRECTION_LABELS[kind],
                    "share": s["share"][kind],
                    "symmetric": s["symmetric"][kind],
                    "gap": s["gap"],
                    "temperature": (fitted.get(kind) or {}).get("temperature"),
                }
            )
    return rows


def base_temperatures(recovery: dict) -> dict[str, float]:
    """The temperatures fitted on the base itself (what the symmetric share subtracts)."""
    fitted = recovery["summary"].get("corrections", {}).get("base", {})
    return {
        kind: c["temperature"]
        for kind, c in fitted.items()
        if kind in ("temp", "bias_temp") and c.get("temperature") is not None
    }


def headline(recovery: dict, correction: str = "bias_temp") -> dict[str, Any]:
    """The pair's symmetric share under one correction beside the noise control's (for the map)."""
    shares = recovery["summary"]["shares"]
    out: dict[str, Any] = {
        "recovery_id": recovery["id"],
        "pair_id": recovery["pair_id"],
        "corpus": recovery["corpus"],
        "correction": correction,
    }
    for role, key in (("post", "symmetric"), (YARDSTICK, "control_symmetric")):
        s = (shares.get(role) or {}).get("symmetric", {}).get(correction)
        out[key] = s["estimate"] if s else None
        out[f"{key}_lo"] = s["lo"] if s else None
        out[f"{key}_hi"] = s["hi"] if s else None
    gap = (shares.get("post") or {}).get("gap")
    out["gap"] = gap["estimate"] if gap else None
    return out
