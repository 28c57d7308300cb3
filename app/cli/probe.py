"""``forgetmap probe``: ask a pair's post model again, flip by flip, through a running app's API
(``POST /api/jobs`` with ``"kind": "probe"``, as ``forgetmap job`` does), and show a pair's probes
with their controls (``GET /api/pairs/{id}/probes``). The probe is forgetmap.analysis.probe."""

from __future__ import annotations

import json

import click
from forgetmap.cli.common import echo_columns
from forgetmap.cli.jobs import APP_OPTION, TOKEN_OPTION, call_app, model_value

CAUSES = ["all", "answered", "no_answer"]  # forgetmap.contract.probe.ProbeOptionsIn.cause
ARM_LABELS = {
    "flips": "flips (the post model's own answers)",
    "shuffled": "control: another flip's answer",
    "kept": "control: rows the post model kept",
    "base": "control: the base model on the flips",
}


@click.group()
def probe() -> None:
    """Ask a pair's post model again, flip by flip, with controls (through a running app)."""


@probe.command("submit")
@click.option("--base", required=True, metavar="NAME=PATH", help="The pair's base model.")
@click.option("--post", required=True, metavar="NAME=PATH", help="The pair's post model.")
@click.option(
    "--benchmark",
    "benchmarks",
    multiple=True,
    help="A stored benchmark to probe (repeatable; default: every multiple-choice one).",
)
@click.option(
    "--cause",
    type=click.Choice(CAUSES),
    default="all",
    show_default=True,
    help="Which flips: all, those whose post answer had an option, or those without one.",
)
@click.option("--max-flips", type=int, default=2000, show_default=True)
@click.option("--kept", type=int, default=200, show_default=True, help="Rows of the kept control.")
@click.option("--seed", type=int, default=0, show_default=True, help="Order and controls.")
@click.option(
    "--engine", type=click.Choice(["vllm", "transformers"]), default="vllm", show_default=True
)
@click.option("--dry-run", is_flag=True, help="Print the request's body, send nothing.")
@APP_OPTION
@TOKEN_OPTION
def probe_submit(
    app_url: str,
    token: str | None,
    base: str,
    post: str,
    benchmarks: tuple[str, ...],
    cause: str,
    max_flips: int,
    kept: int,
    seed: int,
    engine: str,
    dry_run: bool,
) -> None:
    """Probe a stored pair's flips (POST /api/jobs, kind probe): its post model sees each
    flip's prompt and its own answer, then "Therefore, the answer is (", and the option letters
    are scored; prints the job's id as JSON."""
    options: dict = {
        "cause": cause,
        "max_flips": max_flips,
        "kept": kept,
        "seed": seed,
        "engine": engine,
    }
    if benchmarks:
        options["benchmarks"] = list(benchmarks)
    body = {
        "kind": "probe",
        "base": model_value(base, "base"),
        "post": model_value(post, "chat"),
        "options": options,
    }
    if dry_run:
        click.echo(json.dumps(body, indent=2))
        return
    click.echo(json.dumps(call_app(app_url, token, "/api/jobs", body)))


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


@probe.command("show")
@click.argument("pair_id", type=int)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@APP_OPTION
@TOKEN_OPTION
def probe_show(pair_id: int, fmt: str, app_url: str, token: str | None) -> None:
    """A pair's newest probe: per arm the items, recovered, rate and chance rate, and the
    flips' recovery beyond the shuffled control (JSON: every probe of the pair)."""
    probes = call_app(app_url, token, f"/api/pairs/{pair_id}/probes")
    if fmt == "json":
        click.echo(json.dumps(probes, indent=2))
        return
    if not probes:
        click.echo(f"pair {pair_id} has no probe yet: `forgetmap probe submit`")
        return
    summary = probes[0]["summary"]
    rows: list[tuple[str, ...]] = [
        (ARM_LABELS[arm], str(s["n"]), str(s["recovered"]), _rate(s["rate"]), _rate(s["chance"]))
        for arm, s in summary["arms"].items()
    ]
    echo_columns(
        ("arm", "items", "recovered", "rate", "chance"), rows, right=frozenset({1, 2, 3, 4})
    )
    beyond = summary["recovered_beyond_shuffled"]
    if beyond is not None:
        click.echo(
            f"recovered beyond the shuffled control: {100 * beyond['difference']:+.1f} points "
            f"(95% interval {100 * beyond['low']:+.1f} to {100 * beyond['high']:+.1f})"
        )
    for why, n in summary.get("left_out", {}).items():
        click.echo(f"left out: {n} ({why})")
