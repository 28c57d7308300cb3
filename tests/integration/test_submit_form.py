"""The submit form shown again after an error: what was chosen stays chosen (ticked categories,
local benchmarks), and each problem is said once, beside its field, in the form's words."""

from __future__ import annotations

import re

import pytest
from forgetmap.core.taxonomy import CATEGORIES

from tests.support.app_client import admin_client

FORM = {
    "base_path": "org/base-model",
    "post_path": "org/post-model",
    "suite": "categories",
    "seeds": "1",
    "engine": "vllm",
    "mode": "generate",
    "temperature": "0.6",
    "top_p": "0.95",
    "max_tokens": "64",
    "stage": "sft",
    "base_prompting": "base",
    "post_prompting": "chat",
}


@pytest.fixture
def form_client(cli):
    with admin_client(cli) as client:
        token = client.headers.pop("Authorization").removeprefix("Bearer ")
        login = client.get("/login").text
        r = client.post(
            "/login",
            data={"token": token, "csrf": _csrf(login), "next": "/submit"},
            follow_redirects=False,
        )
        assert r.status_code == 303
        yield client


def _csrf(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def _ticked(page: str, name: str) -> set[str]:
    return set(re.findall(rf'name="{name}" value="([^"]+)" checked', page))


def _errors(page: str) -> list[str]:
    return re.findall(r'<p class="error[^"]*"[^>]*>([^<]*)</p>', page)


def test_ticked_categories_survive_an_error_and_each_problem_is_said_once(form_client):
    csrf = _csrf(form_client.get("/submit").text)
    chosen = [CATEGORIES[0], CATEGORIES[2]]
    page = form_client.post(
        "/submit",
        data={**FORM, "temperature": "hot", "max_tokens": "0", "categories": chosen, "csrf": csrf},
    ).text
    assert _ticked(page, "categories") == set(chosen)
    errors = _errors(page)
    assert len(errors) == len(set(errors)), errors  # none twice
    said = " ".join(errors)
    assert "temperature" in said.lower() or "number" in said, errors
    for field in ("temperature", "max_tokens"):
        assert page.count(f'data-field="{field}"') == 1, field
    assert not any(e.startswith("Value error, ") for e in errors), errors  # pydantic's prefix


def test_a_pair_whose_job_has_not_run_says_so_and_promises_no_table(cli):
    """A job's pair before any result: no "table below" that is not there."""
    body = {
        "models": [{"name": "a", "path": "org/model-a"}, {"name": "b", "path": "org/model-b"}],
        "benchmarks": ["piqa"],
        "seeds": [0],
        "config": {"engine": "transformers"},
        "pairs": [{"base": "a", "post": "b"}],
    }
    with admin_client(cli) as client:
        assert client.post("/api/jobs", json=body).status_code == 201
        pair_id = client.get("/api/pairs").json()[0]["id"]
        page = client.get(f"/pairs/{pair_id}").text
    text = " ".join(page.split())
    assert "This pair has no paired samples yet" in text
    assert "neither model has any stored results yet" in text and "table below" not in text
