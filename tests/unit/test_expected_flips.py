"""What a drill-down's flip count is read against (forgetmap.services.pair_report.expected_flips):
per seed, the flips seen, those chance alone makes and those seed noise makes; by hand."""

from __future__ import annotations

import pytest
from forgetmap.services.pair_report import expected_flips

ROWS = [  # pair_benchmarks' records: counts summed over seeds, n and rates per seed
    {
        "benchmark": "a",
        "category": "X",
        "seeds": 2,
        "n": 10,
        "n_10": 6,
        "n_01": 2,
        "f_chance": 0.1,
        "noise_floor": 0.05,
    },
    {
        "benchmark": "b",
        "category": "Y",
        "seeds": 1,
        "n": 4,
        "n_10": 1,
        "n_01": 0,
        "f_chance": 0.0,
        "noise_floor": None,
    },
]


def test_every_benchmark_shown():
    # 1->0: 6 flips over 2 seeds of a, 1 in b's one seed; chance 0.1 x 10 on a, 0 on b (a
    # generative one); noise 0.05 x 10 on a, b has no floor
    assert expected_flips(ROWS, "10") == pytest.approx({"seen": 4.0, "chance": 1.0, "noise": 0.5})
    assert expected_flips(ROWS, "01") == pytest.approx({"seen": 1.0, "chance": 1.0, "noise": 0.5})


def test_one_benchmark_or_category():
    assert expected_flips(ROWS, "10", benchmark="b") == {"seen": 1.0, "chance": 0.0, "noise": None}
    assert expected_flips(ROWS, "10", category="X") == pytest.approx(
        {"seen": 3.0, "chance": 1.0, "noise": 0.5}
    )


def test_no_expectation_for_kept_or_never_or_nothing_shown():
    assert expected_flips(ROWS, "11") is None and expected_flips(ROWS, "00") is None
    assert expected_flips(ROWS, "10", category="Z") is None
