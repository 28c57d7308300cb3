"""The seed-vs-seed counts the map reads (a model against itself: ``seed_transitions``; a pair's
paired samples under two seeds: ``cross_seed_cells``) equal a count by hand over the stored rows,
whatever the seeds are called, whichever samples a seed lacks, and whether the seeds arrive in one
import or one at a time, before or after the pair exists."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import pyarrow as pa
import pyarrow.parquet as pq
from forgetmap.contract.limits import MAX_SEED
from forgetmap.db import open_store
from forgetmap.db.pairing import add_pair
from forgetmap.importers import import_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BENCHMARKS = ("mmlu:anatomy", "piqa")
SAMPLES = 5


def _rows(draw_seeds, data):
    """Per (model, benchmark, seed): the samples present and their 0/1 answers."""
    rows = []
    for model in ("base", "post"):
        for bench in BENCHMARKS:
            for seed in draw_seeds:
                # the first sample is in every seed: each import holds both models
                present = [
                    True,
                    *data.draw(st.lists(st.booleans(), min_size=SAMPLES - 1, max_size=SAMPLES - 1)),
                ]
                answers = data.draw(st.lists(st.booleans(), min_size=SAMPLES, max_size=SAMPLES))
                rows += [
                    {
                        "model": model,
                        "benchmark": bench,
                        "sample_id": f"s{i}",
                        "seed": seed,
                        "correct": answers[i],
                        "num_choices": 4,
                    }
                    for i in range(SAMPLES)
                    if present[i]
                ]
    return rows


def _by_hand(rows):
    answer = {(r["model"], r["benchmark"], r["seed"], r["sample_id"]): r["correct"] for r in rows}
    seeds = sorted({r["seed"] for r in rows})
    self_counts, cross = Counter(), Counter()
    for bench in BENCHMARKS:
        for a, b in combinations(seeds, 2):
            for i in range(SAMPLES):
                sid = f"s{i}"
                for model in ("base", "post"):
                    x, y = answer.get((model, bench, a, sid)), answer.get((model, bench, b, sid))
                    if x is not None and y is not None:
                        self_counts[(model, bench, a, b, 2 * x + y)] += 1
                cells = []
                for seed in (a, b):
                    pre, post = (
                        answer.get(("base", bench, seed, sid)),
                        answer.get(("post", bench, seed, sid)),
                    )
                    cells.append(None if pre is None or post is None else 2 * pre + post)
                if None not in cells:
                    cross[(bench, a, b, cells[0], cells[1])] += 1
    return self_counts, cross


def _stored(store):
    with store.read() as conn:
        transitions = conn.execute(
            "SELECT m.name, b.name, t.seed_a, t.seed_b, t.n_00, t.n_01, t.n_10, t.n_11 "
            "FROM seed_transitions t JOIN models m ON m.id = t.model_id "
            "JOIN benchmarks b ON b.id = t.benchmark_id"
        ).fetchall()
        names = [f"n_{x}_{y}" for x in ("00", "01", "10", "11") for y in ("00", "01", "10", "11")]
        cells = conn.execute(
            f"SELECT b.name, c.seed_a, c.seed_b, {', '.join(names)} FROM cross_seed_cells c "
            "JOIN benchmarks b ON b.id = c.benchmark_id"
        ).fetchall()
    self_counts = Counter()
    for model, bench, a, b, *counts in transitions:
        for cell, n in enumerate(counts):
            if n:
                self_counts[(model, bench, a, b, cell)] += n
    cross = Counter()
    for bench, a, b, *counts in cells:
        for index, n in enumerate(counts):
            if n:
                cross[(bench, a, b, index // 4, index % 4)] += n
    return self_counts, cross


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seeds=st.lists(st.integers(0, 40) | st.just(MAX_SEED), min_size=1, max_size=4, unique=True),
    one_at_a_time=st.booleans(),
    pair_first=st.booleans(),
    data=st.data(),
)
def test_seed_vs_seed_counts_equal_a_count_by_hand(
    tmp_path_factory, seeds, one_at_a_time, pair_first, data
):
    rows = _rows(seeds, data)
    folder = tmp_path_factory.mktemp("seeds")
    store = open_store(folder / "fm.duckdb")
    try:
        batches = [[r for r in rows if r["seed"] == s] for s in seeds] if one_at_a_time else [rows]
        for number, batch in enumerate(batches):
            path = folder / f"rows{number}.parquet"
            pq.write_table(pa.Table.from_pylist(batch), path)
            import_file(store, "table", path)
            if number == 0 and pair_first or number == len(batches) - 1 and not pair_first:
                with store.transaction() as conn:
                    add_pair(conn, "base", "post", label=None, stage=None)
        got_self, got_cross = _stored(store)
    finally:
        store.close()
    want_self, want_cross = _by_hand(rows)
    assert got_self == want_self
    assert got_cross == want_cross
