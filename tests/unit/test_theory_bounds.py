"""The theory lab cannot sink the app: diverging dynamics stop at the grid cap with a clear
error, computations have a time budget, and results are cached per parameter set."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient
from forgetmap.analysis import theory
from forgetmap.analysis.lab import LabParams, TheoryLab
from forgetmap.core.errors import InputError
from forgetmap.runtime.broker import BrokerSettings
from forgetmap.runtime.config import WebSettings
from forgetmap.web import create_app


def test_a_diverging_step_size_fails_fast_at_the_grid_cap():
    started = time.perf_counter()
    with pytest.raises(theory.DivergedError, match="smaller learning rate"):
        theory.train_batch("forward", 6.0, 1.0, 0.0, lr=3.0, steps=300)
    assert time.perf_counter() - started < 2.0


def test_the_budget_stops_a_long_run():
    with theory.time_budget(0.05), pytest.raises(theory.BudgetExceeded):
        theory.train_batch("reverse", 6.0, 1.0, 0.0, lr=1.0, steps=1_000_000)
    # outside the context there is no budget
    assert theory.train_batch("reverse", 6.0, 1.0, 0.0, lr=1.0, steps=3).alpha.shape == (4, 1)


def test_lab_results_and_errors_are_cached_per_parameter_set():
    lab = TheoryLab()
    params = LabParams(steps=20)
    assert not lab.is_cached(params)
    first = lab.data(params)
    started = time.perf_counter()
    assert lab.is_cached(params) and lab.data(LabParams(steps=20)) is first
    assert time.perf_counter() - started < 0.01
    assert not TheoryLab().is_cached(params)  # each lab keeps its own
    with pytest.raises(InputError, match="take over 0.0001 s to compute; use fewer steps"):
        TheoryLab(budget=0.0001).data(LabParams(steps=1000))
    with pytest.raises(InputError, match="lr=3.0: the dynamics diverged"):
        lab.data(LabParams(lr=3.0))
    short = TheoryLab(budget=0.0001)
    with pytest.raises(InputError, match="take over"):
        short.data(LabParams(steps=1000))
    assert short.is_cached(LabParams(steps=1000))  # the failure is kept too
    with pytest.raises(InputError, match="take over"):
        short.data(LabParams(steps=1000))


def test_a_lab_keeps_its_newest_outcomes():
    lab = TheoryLab(cache_size=2)
    for steps in (3, 4, 5):
        lab.data(LabParams(steps=steps))
    assert [lab.is_cached(LabParams(steps=s)) for s in (3, 4, 5)] == [False, True, True]


def test_api_theory_answers_out_of_range_steps_at_once(cli, tmp_path):
    cli("map")
    settings = WebSettings(secret_key="k" * 40, reconcile_seconds=3600)
    with TestClient(
        create_app(cli.db, broker=BrokerSettings(url=None, data_dir=tmp_path), settings=settings)
    ) as client:
        started = time.perf_counter()
        r = client.get("/api/theory", params={"lr": 3.0})
        assert r.status_code == 422
        assert r.json() == {"detail": "query lr: Input should be less than or equal to 2"}
        r = client.get("/theory", params={"steps": 5000}, headers={"Accept": "text/html"})
        assert r.status_code == 422 and "less than or equal to 1000" in r.text
        assert time.perf_counter() - started < 2.0
        assert "2.0" in str(client.get("/openapi.json").json()["paths"]["/api/theory"])
