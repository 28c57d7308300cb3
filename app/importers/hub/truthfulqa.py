"""lighteval's TruthfulQA multiple choice (Open LLM Leaderboard v1's ``harness|truthfulqa:mc|0``)
as the mc1 task it scores.

lighteval's ``truthful_qa_multiple_choice`` shows each question with one list of options, the
mc1 targets' then the mc2 targets' (``specifics.len_mc1`` says where mc2's begin), with the
gold indices of both, and scores both from that list's log-likelihoods: ``mc1`` is 1 when the
most likely of mc1's options is its one true answer (index 0), ``mc2`` is the probability mass
on mc2's true answers (not 0 or 1, so not a flip). forgetmap counts mc1, whose k is mc1's
count of options: read as it is, every row would claim mc1's and mc2's options together, and
the chance term would take a k about twice the real one. ``mc1_details`` writes the same rows
with mc1's part of each: its options, their log-likelihoods and per-option token counts, its
gold index; the metrics stay as lighteval wrote them.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from forgetmap.core.errors import InputError

MC_TASK = "harness|truthfulqa:mc|0"
"""The task as the leaderboard's files name it."""
MC1_TASK = "harness|truthfulqa:mc1|0"
"""The task name the mc1 file is written under (the taxonomy's ``truthfulqa:mc1``)."""

_PER_OPTION = ("predictions", "input_tokens", "cont_tokens", "truncated", "padded")
"""The flat details' columns that hold one entry per option."""


def _cell(value: Any) -> Any:
    """A cell as stored, or parsed back from the text some lighteval versions stored instead."""
    if not isinstance(value, str) or value.strip()[:1] not in ("[", "{", "("):
        return value
    try:
        return json.loads(value)
    except ValueError:
        pass
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value


def _mc1_row(row: dict[str, Any], number: int, source: Path) -> dict[str, Any]:
    choices = _cell(row.get("choices"))
    specifics = _cell(row.get("specifics"))
    n = specifics.get("len_mc1") if isinstance(specifics, dict) else None
    if not isinstance(choices, list) or isinstance(n, bool) or not isinstance(n, int):
        raise InputError(
            f"{source}: row {number} does not say which options are mc1's (no "
            "specifics.len_mc1): not lighteval's truthfulqa:mc"
        )
    if not 2 <= n <= len(choices):
        raise InputError(
            f"{source}: row {number}: len_mc1 {n} does not fit its {len(choices)} options"
        )
    out = dict(row)
    out["choices"] = choices[:n]
    gold = _cell(row.get("gold_index"))
    out["gold_index"] = [g for g in (gold if isinstance(gold, list) else [gold]) if g < n]
    for name in _PER_OPTION:
        values = _cell(row.get(name))
        if isinstance(values, list) and len(values) == len(choices):
            out[name] = values[:n]
    return out


def mc1_details(source: Path, target: Path) -> None:
    """Write ``source`` (lighteval's flat truthfulqa:mc details) to ``target`` with mc1's part of
    each row; InputError when the file does not say where mc1's options end."""
    table = pq.read_table(source)
    rows = [_mc1_row(row, i, source) for i, row in enumerate(table.to_pylist(), start=1)]
    pq.write_table(pa.Table.from_pylist(rows).select(table.column_names), target)
