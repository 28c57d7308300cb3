"""The JSON API served by `forgetmap serve` (the dashboard issue adds pages on top)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.web import create_app
from tests.integration.test_import_and_map import BASE, POST, rows_for, write_csv


@pytest.fixture
def client(cli, tmp_path):
    write_csv(tmp_path / "base.csv", rows_for("base-7b", BASE))
    write_csv(tmp_path / "post.csv", rows_for("post-7b", POST))
    cli("import", "table", tmp_path / "base.csv")
    cli("import", "table", tmp_path / "post.csv")
    cli("pair", "add", "base-7b", "post-7b", "--label", "7B")
    with TestClient(create_app(cli.db)) as client:
        yield client


def test_healthz(client):
    assert client.get("/healthz").json() == {"status": "ok"}


def test_api_map_returns_the_same_records_as_the_cli(client, cli):
    for params, args in (
        ({}, []),
        ({"level": "benchmark"}, ["--level", "benchmark"]),
        ({"aggregate": "micro"}, ["--aggregate", "micro"]),
    ):
        response = client.get("/api/map", params=params)
        assert response.status_code == 200
        assert response.json() == cli.json("map", "--format", "json", *args)


def test_api_map_rejects_bad_parameters_with_422(client):
    response = client.get("/api/map", params={"level": "planet"})
    assert response.status_code == 422
    assert "benchmark" in response.text and "category" in response.text


def test_api_pairs(client):
    [pair] = client.get("/api/pairs").json()
    assert (pair["id"], pair["base"], pair["post"], pair["label"]) == (1, "base-7b", "post-7b", "7B")
    assert (pair["benchmarks"], pair["seeds"], pair["paired_samples"]) == (2, 2, 28)
