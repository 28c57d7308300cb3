"""The map's probe fields (forgetmap.services.probe_cells): hand-summed counts at both levels."""

import pytest
from forgetmap.services.probe_cells import PROBE_FIELDS, with_probe_counts

pytestmark = pytest.mark.unit


def row(pair, benchmark, category, seed, probed, recovered, control, probe_id=7):
    return {
        "pair_id": pair,
        "probe_id": probe_id,
        "benchmark": benchmark,
        "category": category,
        "seed": seed,
        "probed": probed,
        "recovered": recovered,
        "control": control,
    }


COUNTS = [
    row(1, "arith", "Math", 0, 10, 6, 1),
    row(1, "arith", "Math", 1, 8, 5, 2),
    row(1, "cities", "Knowledge/QA", 0, 4, 1, 1),
    row(1, "odd", "Uncategorized", 0, 3, 3, 0),
    row(2, "arith", "Math", 0, 0, 0, 0, probe_id=9),
]


def test_benchmark_records_take_their_seed_and_cells_sum_the_seeds():
    records = [
        {"pair_id": 1, "benchmark": "arith", "category": "Math", "seed": 1},
        {"pair_id": 1, "benchmark": "cities", "category": "Knowledge/QA", "seed": 1},
    ]
    out = with_probe_counts(records, COUNTS, "benchmark")
    assert [out[0][f] for f in PROBE_FIELDS] == [8, 5, 2, 7]
    # cities has no seed-1 outcomes: nothing said, all four fields None together
    assert [out[1][f] for f in PROBE_FIELDS] == [None] * 4
    cells = with_probe_counts(
        [{"pair_id": 1, "column": "arith"}, {"pair_id": 1, "column": "Total"}],
        COUNTS,
        "benchmark",
    )
    assert [cells[0][f] for f in PROBE_FIELDS] == [18, 11, 3, 7]
    # Total leaves out the categories it does not count (Uncategorized)
    assert [cells[1][f] for f in PROBE_FIELDS] == [22, 12, 4, 7]


def test_category_records_and_a_probe_that_asked_nothing():
    records = [
        {"pair_id": 1, "category": "Math"},
        {"pair_id": 1, "category": "Uncategorized"},
        {"pair_id": 2, "category": "Math"},
        {"pair_id": 3, "category": "Math"},
    ]
    out = with_probe_counts(records, COUNTS, "category")
    assert [out[0][f] for f in PROBE_FIELDS] == [18, 11, 3, 7]
    assert [out[1][f] for f in PROBE_FIELDS] == [3, 3, 0, 7]
    # a probe with no flips in the cell and a pair with no probe say nothing
    assert [out[2][f] for f in PROBE_FIELDS] == [None] * 4
    assert [out[3][f] for f in PROBE_FIELDS] == [None] * 4
    assert out[0]["category"] == "Math"  # the record's own fields are kept


def test_recovered_by_most_keeps_what_most_askers_recovered():
    from forgetmap.services.atlas import AtlasQuery

    most = AtlasQuery(recovered_by_most=True)
    assert most.keeps({"probed": 3, "recovered": 2})
    assert not most.keeps({"probed": 2, "recovered": 1})  # half is not most
    assert not most.keeps({"probed": 0, "recovered": 0})  # nobody asked
    assert AtlasQuery().keeps({"probed": 0, "recovered": 0})
