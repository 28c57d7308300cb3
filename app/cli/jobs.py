"""``forgetmap job``: submit an evaluation of a pair to a running app (``POST /api/jobs`` with a
submit token, as ``forgetmap watch`` does), optionally adaptive, and show a job."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click
from forgetmap.cli.common import CliError, echo_columns
from forgetmap.cli.pairs import stage_option
from forgetmap.core.display import utc_time

if TYPE_CHECKING:
    from forgetmap.contract.jobs import EvaluateJobIn

ENGINES = [
    "vllm",
    "transformers",
]  # forgetmap.contract.jobs.Engine (tests/unit/test_adaptive_jobs.py)
MODES = ["generate", "loglik"]  # forgetmap.contract.jobs.Mode
PROMPTINGS = ["chat", "base"]  # forgetmap.contract.jobs.Prompting


def model_value(value: str, prompting: str) -> dict:
    """A model option's NAME=PATH as the body's model."""
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise CliError(f"a model is NAME=PATH (a Hub id or a folder), got {value!r}")
    return {"name": name, "path": path, "prompting": prompting}


def job_request(
    *,
    base: str,
    post: str,
    benchmarks: str,
    seeds: str,
    base_prompting: str,
    post_prompting: str,
    engine: str,
    mode: str,
    temperature: float,
    top_p: float,
    max_tokens: int,
    shots: int,
    limit: int | None,
    label: str | None,
    stage: str | None,
    adaptive: bool,
    target: float | None,
    min_samples: int | None,
    max_samples: int | None,
    chunk: int | None,
    round_growth: float | None = None,
) -> EvaluateJobIn:
    """The job of the command's options, checked as the app checks a ``POST /api/jobs`` body: a
    job the app would refuse is refused here with the line its answer would give."""
    try:
        seed_list = [int(s) for s in seeds.split(",") if s.strip()]
    except ValueError:
        raise CliError(f"--seeds must be integers separated by commas, got {seeds!r}") from None
    models = [model_value(base, base_prompting), model_value(post, post_prompting)]
    body = {
        "models": models,
        "benchmarks": [b.strip() for b in benchmarks.split(",") if b.strip()],
        "seeds": seed_list,
        "config": {
            "engine": engine,
            "mode": mode,
            "temperature": temperature,
            "top_p": top_p,
            "max_tokens": max_tokens,
            "shots": shots,
            "limit": limit,
        },
        "pairs": [
            {"base": models[0]["name"], "post": models[1]["name"], "label": label, "stage": stage}
        ],
    }
    settings = {
        "target_points": target,
        "min_samples": min_samples,
        "max_samples": max_samples,
        "chunk_size": chunk,
        "round_growth": round_growth,
    }
    given = {k: v for k, v in settings.items() if v is not None}
    if given and not adaptive:
        raise CliError(
            "--target, --min-samples, --max-samples, --chunk and --round-growth need --adaptive"
        )
    if adaptive:
        body["adaptive"] = given
    return _checked(body)


def _checked(body: dict) -> EvaluateJobIn:
    from forgetmap.contract.base import request_problem_text
    from forgetmap.contract.jobs import EvaluateJobIn
    from forgetmap.core.errors import InputError
    from pydantic import ValidationError

    try:
        return EvaluateJobIn.model_validate(body).check()
    except ValidationError as exc:
        # the app's 422 line for the same body, located under the job's kind
        # (tests/integration/test_job_submit_cli.py compares the two)
        raise _refused(request_problem_text(exc.errors(), ("body", "evaluate"))) from None
    except InputError as exc:
        raise _refused(str(exc)) from None


def _refused(detail: str, status: int = 422) -> CliError:
    return CliError(f"the app refused the job ({status}): {detail}")


def wire_body(job: EvaluateJobIn) -> dict:
    """The body the command sends (and its dry run prints): the fields its options set; the
    rest (the kind, a model's revision, adaptive settings not given) the app fills in."""
    return job.model_dump(mode="json", exclude_unset=True)


def call_app(app_url: str, token: str | None, path: str, body: dict | None = None) -> dict:
    """The app's JSON answer to a GET of ``path`` (a POST of ``body`` when given), with the
    token; a one-line CliError for what the app refuses or a connection that fails."""
    import httpx

    if not token:
        raise CliError(
            "this needs a token: --token or $FORGETMAP_API_TOKEN "
            "(`forgetmap token create NAME --role submit`)"
        )
    headers = {"Authorization": f"Bearer {token}"}
    try:
        with httpx.Client(base_url=app_url, headers=headers, timeout=60) as http:
            r = http.post(path, json=body) if body is not None else http.get(path)
    except httpx.TransportError as exc:
        raise CliError(f"cannot reach the app at {app_url}: {exc}") from None
    if r.status_code >= 400:
        try:
            detail = r.json().get("detail", r.text)
        except ValueError:
            detail = r.text
        if isinstance(detail, list):  # the boundary's problems: field and message each
            detail = "; ".join(
                f"{'.'.join(str(p) for p in d.get('loc', [])[1:])}: {d.get('msg')}" for d in detail
            )
        raise _refused(detail, r.status_code)
    return r.json()


APP_OPTION = click.option(
    "--app",
    "app_url",
    envvar="FORGETMAP_APP_URL",
    default="http://127.0.0.1:8000",
    show_default=True,
    help="The forgetmap app ($FORGETMAP_APP_URL).",
)
TOKEN_OPTION = click.option(
    "--token", envvar="FORGETMAP_API_TOKEN", help="A submit token ($FORGETMAP_API_TOKEN)."
)


@click.group()
def job() -> None:
    """Evaluation jobs, through a running app's API."""


@job.command("submit")
@click.option("--base", required=True, metavar="NAME=PATH", help="The base model.")
@click.option("--post", required=True, metavar="NAME=PATH", help="The post-trained model.")
@click.option("--benchmarks", required=True, help="Comma-separated benchmarks.")
@click.option("--seeds", default="0,1,2", show_default=True)
@click.option("--base-prompting", type=click.Choice(PROMPTINGS), default="base", show_default=True)
@click.option("--post-prompting", type=click.Choice(PROMPTINGS), default="chat", show_default=True)
@click.option("--engine", type=click.Choice(ENGINES), default="vllm", show_default=True)
@click.option("--mode", type=click.Choice(MODES), default="generate", show_default=True)
@click.option("--temperature", type=float, default=0.6, show_default=True)
@click.option("--top-p", type=float, default=0.95, show_default=True)
@click.option("--max-tokens", type=int, default=2048, show_default=True)
@click.option("--shots", type=int, default=3, show_default=True, help="Few-shot examples (base).")
@click.option("--limit", type=int, help="Items per benchmark (default: all).")
@click.option("--label", help="The pair's label.")
@stage_option("What post-training step the pair measures")
@click.option(
    "--adaptive",
    is_flag=True,
    help="Stop each benchmark once F_true and BT_true are known to +-TARGET points.",
)
@click.option("--target", type=float, help="Adaptive: half-width in points (1.5).")
@click.option("--min-samples", type=int, help="Adaptive: samples before the first look (100).")
@click.option("--max-samples", type=int, help="Adaptive: at most this many samples (all).")
@click.option("--chunk", type=int, help="Adaptive: look every CHUNK samples (50).")
@click.option(
    "--round-growth",
    type=float,
    help="Adaptive: each round reaches this many times the samples before it (1.5).",
)
@click.option("--dry-run", is_flag=True, help="Print the request's body, send nothing.")
@APP_OPTION
@TOKEN_OPTION
def job_submit(app_url: str, token: str | None, dry_run: bool, **options) -> None:
    """Evaluate a pair (POST /api/jobs); prints the job's id and shards as JSON."""
    body = wire_body(job_request(**options))
    if dry_run:
        click.echo(json.dumps(body, indent=2))
        return
    click.echo(json.dumps(call_app(app_url, token, "/api/jobs", body)))


@job.command("show")
@click.argument("job_id", type=int)
@APP_OPTION
@TOKEN_OPTION
def job_show(job_id: int, app_url: str, token: str | None) -> None:
    """A job as JSON (GET /api/jobs/ID): status, shards, and an adaptive job's savings."""
    click.echo(json.dumps(call_app(app_url, token, f"/api/jobs/{job_id}"), indent=2))


@job.command("list")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@APP_OPTION
@TOKEN_OPTION
def job_list(fmt: str, app_url: str, token: str | None) -> None:
    """Every job, newest first (GET /api/jobs): what it evaluates, its status, owner, shards
    finished and failed, and when it was made (UTC)."""
    jobs = call_app(app_url, token, "/api/jobs")
    if fmt == "json":
        click.echo(json.dumps(jobs, indent=1))
        return
    if not jobs:
        click.echo("no jobs yet: `forgetmap job submit`, or the Submit page")
        return
    echo_columns(
        ("id", "status", "kind", "evaluates", "owner", "shards done", "failed", "created"),
        [
            (
                str(j["id"]),
                j["status"],
                j["kind"],
                j["subject"],
                j["owner"] or "",
                f"{j['finished']} of {j['shards']}",
                str(j["failed"]),
                utc_time(j["created_at"]),
            )
            for j in jobs
        ],
        right=frozenset({0, 6}),
        keep=1,
    )
