"""One validator per input, whichever entry point it comes through (issue 50, row 8): a pair's stage
(`forgetmap pair add`, `forgetmap job submit`, ``POST /api/pairs``, a job's pairs), the size
filters of the map and the atlas (``min_size_b=``: what their forms send without JavaScript), the
map page's metric, and a seed (a table's seed column, `forgetmap import lm-eval|lighteval
--seed`, the upload route's ``seed``). Each attack as it was written, now refused with the
allowed values, beside the legitimate use still working."""

from __future__ import annotations

import html
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from forgetmap.contract.limits import MAX_SEED
from forgetmap.core.stages import STAGE_NAMES
from forgetmap.demo.layouts.lm_eval import write_lm_eval_samples
from forgetmap.demo.layouts.paper import make_items, write_run

from tests.support.app_client import admin_client, finished_job
from tests.support.tables import BASE, POST, rows_for, write_csv

ALLOWED_STAGES = ", ".join(STAGE_NAMES)
METRICS = ("f_true", "bt_true", "net", "f", "bt", "f_rel")


@pytest.fixture
def paired(cli, tmp_path):
    """A database with two imported models (no pair yet)."""
    write_csv(tmp_path / "base.csv", rows_for("base-7b", BASE))
    write_csv(tmp_path / "post.csv", rows_for("post-7b", POST))
    cli("import", "table", tmp_path / "base.csv")
    cli("import", "table", tmp_path / "post.csv")
    return cli


def _one_line_error(result) -> str:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1, result.stderr
    return result.stderr


# ------------------------------------------------------------------------------------- stage


def test_pair_add_refuses_a_stage_the_api_refuses_and_stores_a_listed_one(paired):
    refused = paired("pair", "add", "base-7b", "post-7b", "--stage", "not-a-stage", ok=False)
    assert _one_line_error(refused) == (
        f"error: --stage must be one of {ALLOWED_STAGES}; got 'not-a-stage'\n"
    )
    assert "no pairs yet" in paired("pair", "list").stdout  # nothing was stored
    paired("pair", "add", "base-7b", "post-7b", "--stage", "domain-cpt")
    with admin_client(paired) as client:
        [pair] = client.get("/api/pairs").json()
        assert pair["stage"] == "domain-cpt"
        # the API: the same list, its own 422
        body = {"base": "base-7b", "post": "post-7b", "stage": "not-a-stage"}
        answer = client.post("/api/pairs", json=body)
        assert answer.status_code == 422
        assert all(f"'{stage}'" in answer.json()["detail"] for stage in STAGE_NAMES)
        assert client.post("/api/pairs", json={**body, "stage": "sft"}).status_code == 201
        assert client.get("/api/pairs").json()[0]["stage"] == "sft"


def test_job_submit_takes_the_same_stages(cli):
    args = [
        "job",
        "submit",
        "--base",
        "a=org/a",
        "--post",
        "b=org/b",
        "--benchmarks",
        "piqa",
        "--dry-run",
    ]
    refused = cli(*args, "--stage", "dpo", ok=False)
    assert (
        _one_line_error(refused) == f"error: --stage must be one of {ALLOWED_STAGES}; got 'dpo'\n"
    )
    body = json.loads(cli(*args, "--stage", "rl").stdout)
    assert body["pairs"][0]["stage"] == "rl"
    with admin_client(cli) as client:  # the job's own route: the same list
        answer = client.post(
            "/api/jobs", json={**body, "pairs": [{**body["pairs"][0], "stage": "dpo"}]}
        )
        assert answer.status_code == 422 and "'domain-cpt'" in answer.json()["detail"]


# -------------------------------------------------------------------------- size and metric


def test_an_empty_size_is_no_bound_on_the_map_as_on_the_atlas(paired):
    paired("pair", "add", "base-7b", "post-7b", "--label", "7B")
    with admin_client(paired) as client:
        # what the map's form sends without JavaScript: every field, the empty ones empty
        form = {
            "metric": "f_true",
            "level": "category",
            "aggregate": "macro",
            "stage": "",
            "family": "",
            "q": "",
            "min_size_b": "",
            "max_size_b": "",
        }
        for path in ("/", "/atlas"):
            answer = client.get(path, params={"min_size_b": ""})
            assert answer.status_code == 200, (path, answer.text[-500:])
        page = client.get("/", params=form)
        assert page.status_code == 200 and "7B" in page.text
        assert client.get("/api/map", params={"min_size_b": "", "max_size_b": ""}).json() == (
            client.get("/api/map").json()
        )
        # a bound still filters, and a bad one is the same 422 on every entry point
        assert len(client.get("/api/map", params={"min_size_b": "6"}).json()) == 3
        assert client.get("/api/map", params={"min_size_b": "8"}).json() == []
        for path in ("/", "/atlas", "/api/map", "/api/atlas"):
            for value, message in (
                ("big", "min_size_b must be a number of billions, got 'big'"),
                ("-1", "min_size_b must be between 0 and 1,000,000"),
            ):
                answer = client.get(path, params={"min_size_b": value})
                assert answer.status_code == 422, (path, value)
                assert message in html.unescape(answer.text), (path, answer.text[-500:])


def test_the_map_page_refuses_an_unknown_metric_naming_the_known_ones(paired):
    paired("pair", "add", "base-7b", "post-7b")
    with admin_client(paired) as client:
        answer = client.get("/", params={"metric": "bogus"})
        assert answer.status_code == 422 and "text/html" in answer.headers["content-type"]
        assert all(f"&#39;{metric}&#39;" in answer.text for metric in METRICS), answer.text
        for metric in METRICS:
            page = client.get("/", params={"metric": metric})
            assert page.status_code == 200
            assert f'<option value="{metric}" selected>' in page.text
        assert '<option value="f_true" selected>' in client.get("/").text  # the default


# ------------------------------------------------------------------------------------- seeds


def _table(tmp_path, name: str, seed: str) -> str:
    path = tmp_path / name
    path.write_text(f"model,benchmark,sample_id,seed,correct\nm,piqa,q1,{seed},1\n")
    return path


@pytest.mark.parametrize(
    ("seed", "message"),
    [
        ("-1", "seed must be between 0 and 2147483647, got -1"),
        (str(MAX_SEED + 1), f"seed must be between 0 and 2147483647, got {MAX_SEED + 1}"),
        ("9" * 5000, "seed must be an integer, got '" + "9" * 60 + "...'"),
    ],
)
def test_a_table_refuses_a_seed_out_of_range_in_one_line(cli, tmp_path, seed, message):
    refused = cli("import", "table", _table(tmp_path, "bad.csv", seed), ok=False)
    assert _one_line_error(refused) == (
        f"error: bad.csv: row 1: {message} (nothing was imported)\n"
    )
    assert _seeds(cli) == {}  # nothing was stored
    cli("import", "table", _table(tmp_path, "zero.csv", "0"))
    cli("import", "table", _table(tmp_path, "two.csv", "2"))
    assert _seeds(cli) == {"m": {0, 2}}


def _seeds(cli) -> dict[str, set[int]]:
    """The seeds stored per model (results: model_id, benchmark_id, seed, ...)."""
    contents = cli.contents()
    names = {row[0]: row[1] for row in contents["models"]}
    seeds: dict[str, set[int]] = {}
    for row in contents["results"]:
        seeds.setdefault(names[row[0]], set()).add(row[2])
    return seeds


def test_a_parquet_tables_integer_seed_is_held_to_the_same_range(cli, tmp_path):
    columns = {"model": ["m"], "benchmark": ["piqa"], "sample_id": ["q1"], "correct": [1]}
    pq.write_table(
        pa.table({**columns, "seed": pa.array([-3], pa.int64())}), tmp_path / "b.parquet"
    )
    refused = cli("import", "table", tmp_path / "b.parquet", ok=False)
    assert "b.parquet: row 1: seed must be between 0 and 2147483647, got -3" in (
        _one_line_error(refused)
    )
    pq.write_table(pa.table({**columns, "seed": pa.array([2], pa.int64())}), tmp_path / "g.parquet")
    cli("import", "table", tmp_path / "g.parquet")
    assert _seeds(cli) == {"m": {2}}


def test_the_seed_option_is_one_rule_on_the_command_line_and_the_upload_route(cli, tmp_path):
    samples = write_lm_eval_samples(tmp_path / "lm", "mmlu_anatomy", [1, 0, 1, 1])
    tree = tmp_path / "le"
    write_run(
        tree,
        "org/le",
        "2025-07-01T10-00-00.000001",
        {"community|bbh_reasoning_letter:navigate|0": (make_items("navigate", 4), [1, 0, 1, 0])},
        style="base",
        seed=0,
    )
    line = "--seed must be between 0 and 2147483647, got -1"
    for args in (("lm-eval", samples, "--model", "m"), ("lighteval", tree)):
        refused = cli("import", *args, "--seed", "-1", ok=False)
        assert _one_line_error(refused) == f"error: {line} (nothing was imported)\n"
    assert _seeds(cli) == {}
    cli("import", "lm-eval", samples, "--model", "m", "--seed", "2")
    cli("import", "lighteval", tree, "--seed", "0")
    assert _seeds(cli) == {"m": {2}, "org/le": {0}}
    with admin_client(cli) as client:
        params = {"kind": "lm-eval", "model": "up", "filename": samples.name}
        # the route's own parser refuses a number past its size; the options' check the rest
        for seed, told in (("-1", line), ("9" * 5000, "query seed: Unable to parse input string")):
            answer = client.post(
                "/api/imports", params={**params, "seed": seed}, content=samples.read_bytes()
            )
            assert answer.status_code == 422 and answer.json()["detail"].startswith(told)
        answer = client.post(
            "/api/imports", params={**params, "seed": "2"}, content=samples.read_bytes()
        )
        assert answer.status_code == 202, answer.text
        job = finished_job(client, answer.json()["id"])
        assert job["status"] == "done", job
    assert _seeds(cli) == {"m": {2}, "org/le": {0}, "up": {2}}
