"""The OpenAPI document and the answers agree: typed bodies, declared codes, one error shape."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from forgetmap.runtime.broker import BrokerSettings
from forgetmap.runtime.config import WebSettings
from forgetmap.web import create_app


@pytest.fixture
def client(cli, tmp_path):
    rows = "model,benchmark,sample_id,correct,num_choices\n" + "".join(
        f"{m},piqa,s{i},{(i + j) % 2},2\n" for j, m in enumerate(("a", "b")) for i in range(4)
    )
    (tmp_path / "r.csv").write_text(rows)
    cli("import", "table", tmp_path / "r.csv")
    cli("pair", "add", "a", "b")
    worker = cli("token", "create", "w", "--role", "worker").stdout.strip()
    settings = WebSettings(secret_key="k" * 40, reconcile_seconds=3600)
    with TestClient(
        create_app(cli.db, broker=BrokerSettings(url=None, data_dir=tmp_path), settings=settings)
    ) as c:
        c.headers["Authorization"] = f"Bearer {worker}"
        yield c


def test_empty_sample_parameters_are_a_422_not_a_500(client):
    r = client.get("/api/pairs/1/sample", params={"benchmark": "", "sample_id": ""})
    assert r.status_code == 422
    assert r.json() == {
        "detail": "query benchmark: String should have at least 1 character; "
        "query sample_id: String should have at least 1 character"
    }


def test_wrongly_typed_bodies_are_refused(client):
    for body in ({"done": "5"}, {"done": True}, {"done": 1.5}, {"done": 1, "extra": 0}):
        r = client.post("/api/shards/0/progress", json=body)
        assert r.status_code == 422, (body, r.text)
        assert isinstance(r.json()["detail"], str)
    # 3.0 is the integer 3 in JSON; shard 0 does not exist
    assert client.post("/api/shards/0/progress", json={"done": 3.0}).status_code == 404


def test_the_document_types_every_body_and_declares_every_error(client):
    doc = client.get("/openapi.json").json()
    jobs = doc["paths"]["/api/jobs"]["post"]
    schema = jobs["requestBody"]["content"]["application/json"]["schema"]
    assert {ref["$ref"].rsplit("/", 1)[1] for ref in schema["oneOf"]} == {
        "EvaluateJobIn",
        "RecoverJobIn",
        "SeriesJobIn",
        "ProbeJobIn",
        "JudgeJobIn",
        "MergeJobIn",
        "SoupJobIn",
    }
    assert set(jobs["responses"]) == {"201", "400", "401", "403", "413", "422"}
    assert set(doc["paths"]["/api/pairs/{pair_id}/sample"]["get"]["responses"]) == {
        "200",
        "401",
        "404",
        "422",
    }
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    for path, operations in doc["paths"].items():
        for operation in operations.values():
            for code, response in operation["responses"].items():
                if code[0] in "45":
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (path, code)


def test_method_not_allowed_lists_every_method_of_the_path(client):
    r = client.delete("/api/jobs")
    assert r.status_code == 405 and r.headers["allow"] == "GET, POST"


def test_the_document_names_the_token_so_that_docs_can_send_it(client):
    """/docs has an Authorize button (a security scheme) and sends the token with every call:
    required by the write operations, optional for the reads (a private app needs it)."""
    doc = client.get("/openapi.json").json()
    scheme = doc["components"]["securitySchemes"]["token"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    assert doc["paths"]["/api/jobs"]["post"]["security"] == [{"token": []}]
    assert doc["paths"]["/api/results"]["post"]["security"] == [{"token": []}]
    assert doc["paths"]["/api/map"]["get"]["security"] == [{"token": []}, {}]
    assert "security" not in doc["paths"]["/healthz"]["get"]
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            if method != "get":
                assert operation["security"] == [{"token": []}], path


def test_the_document_carries_the_one_version_of_the_package(client):
    """One version, pyproject.toml's: what the installed package and the API document both say."""
    import tomllib
    from pathlib import Path

    import forgetmap

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text())["project"]["version"]
    assert forgetmap.__version__ == declared
    assert client.get("/openapi.json").json()["info"]["version"] == declared
