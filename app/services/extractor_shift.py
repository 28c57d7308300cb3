"""Does a cell depend on the extractor? A map graded by a score set
(``forgetmap map --scores NAME``, a set ``forgetmap rescore`` wrote) beside the harness's own
grades: each record says how far F_true moved, and whether that is more than the harness's interval
allows.

One model's GSM8K score moves from 80% to 2% with the extractor alone; the paper says its own
code-reasoner results "depend on the extraction method". A cell whose F_true moves between two
reasonable extractors by more than the half-width of its 95% interval (``f_true_low`` ..
``f_true_high``, the harness's) is marked ``depends_on_extractor``: its colour says as much about
how answers were read as about what the model forgot.
"""

from __future__ import annotations

from forgetmap.core.errors import InputError
from forgetmap.db import scores as scores_db
from forgetmap.db.store import Store

SHIFT_FIELDS = ("scores", "f_true_harness", "f_true_shift", "depends_on_extractor")
"""What a record of a map graded by a score set carries beyond the usual fields: the set's name,
F_true under the harness's grades (None where the harness's map has no such record), the move
F_true(set) - F_true(harness), and whether it exceeds the harness's interval half-width."""


def score_set_id(store: Store, name: str) -> int:
    """The id of the score set ``name``; a one-line error naming the command that lists them."""
    with store.read() as conn:
        found = scores_db.score_set(conn, name)
    if found is None:
        raise InputError(
            f"no score set {name!r}; `forgetmap scores` lists them, "
            "`forgetmap rescore NAME --extractor lenient` makes one"
        )
    return found[0]


def _key(record: dict, level: str) -> tuple:
    if level == "benchmark":
        return (record["pair_id"], record["benchmark"], record["seed"])
    return (record["pair_id"], record["category"])


def extractor_shift(scored: list[dict], harness: list[dict], level: str, name: str) -> list[dict]:
    """``scored``'s records, each with ``SHIFT_FIELDS`` against the ``harness`` records of the same
    (pair, benchmark, seed) or (pair, category)."""
    by_key = {_key(r, level): r for r in harness}
    out = []
    for record in scored:
        base = by_key.get(_key(record, level))
        shift = None if base is None else record["f_true"] - base["f_true"]
        low, high = (None, None) if base is None else (base["f_true_low"], base["f_true_high"])
        half = None if low is None or high is None else (high - low) / 2
        out.append(
            {
                **record,
                "scores": name,
                "f_true_harness": None if base is None else base["f_true"],
                "f_true_shift": shift,
                "depends_on_extractor": shift is not None
                and half is not None
                and abs(shift) > half,
            }
        )
    return out
