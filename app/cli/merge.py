"""``forgetmap merge``: mix a stored pair's base back into its post model at several mixes, or
average a training run's last checkpoints, through a running app's API (``POST /api/jobs`` with
``"kind": "merge"`` or ``"soup"``, forgetmap.services.merge), and ask a sweep which mix to take
(``GET /api/series/{id}/merge-choice``)."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import click
from forgetmap.cli.common import CliError, echo_columns
from forgetmap.cli.jobs import APP_OPTION, TOKEN_OPTION, call_app, model_value


@click.group()
def merge() -> None:
    """Merge a pair's base back in, mix by mix, average a run's last checkpoints, and choose a
    mix (through a running app)."""


def _submit(app_url: str, token: str | None, body: dict, dry_run: bool) -> None:
    """Print the job the app made of ``body`` (``POST /api/jobs``), or only ``body``."""
    if dry_run:
        click.echo(json.dumps(body, indent=2))
    else:
        click.echo(json.dumps(call_app(app_url, token, "/api/jobs", body)))


@merge.command("sweep")
@click.option("--base", required=True, metavar="NAME=PATH", help="The pair's base model.")
@click.option("--post", required=True, metavar="NAME=PATH", help="The pair's post model.")
@click.option(
    "--base-prompting", type=click.Choice(["base", "chat"]), default="base", show_default=True
)
@click.option(
    "--post-prompting",
    type=click.Choice(["base", "chat"]),
    default="chat",
    show_default=True,
    help="How the post model and every merge are prompted.",
)
@click.option(
    "--method",
    type=click.Choice(["linear", "slerp", "ties", "dare_ties"]),
    default="linear",
    show_default=True,
)
@click.option(
    "--density",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.5,
    show_default=True,
    help="TIES and DARE: the share of the post model's task vector kept.",
)
@click.option(
    "--mix",
    "mixes",
    type=float,
    multiple=True,
    help="A mix, the post model's share from 0 to 1 (repeatable; default 0, 0.25, 0.5, 0.75, 1).",
)
@click.option("--series", help="The sweep's series name (default: 'POST merged back (METHOD)').")
@click.option("--keep", is_flag=True, help="Keep each merged checkpoint after its evaluation.")
@click.option("--dry-run", is_flag=True, help="Print the request's body, send nothing.")
@APP_OPTION
@TOKEN_OPTION
def merge_sweep(
    app_url: str,
    token: str | None,
    base: str,
    post: str,
    base_prompting: str,
    post_prompting: str,
    method: str,
    density: float,
    mixes: tuple[float, ...],
    series: str | None,
    keep: bool,
    dry_run: bool,
) -> None:
    """Sweep a stored pair's mixes: workers build each merge with mergekit, evaluate it on the
    post model's benchmarks and seeds and remove it unless kept; prints the job as JSON."""
    body: dict = {
        "kind": "merge",
        "base": model_value(base, base_prompting),
        "post": model_value(post, post_prompting),
        "method": method,
        "keep": keep,
    }
    if method in ("ties", "dare_ties"):
        body["density"] = density
    if mixes:  # else the API's default (forgetmap.contract.merge.DEFAULT_MIXES)
        body["mixes"] = list(mixes)
    if series:
        body["series"] = series
    _submit(app_url, token, body, dry_run)


@merge.command("soup")
@click.argument("series")
@click.option(
    "--size",
    "sizes",
    type=click.IntRange(2, 64),
    multiple=True,
    help="Average the run's last N checkpoints (repeatable; default 2, 4, 8 as the run allows).",
)
@click.option("--keep", is_flag=True, help="Keep each soup after its evaluation.")
@click.option("--dry-run", is_flag=True, help="Print the request's body, send nothing.")
@APP_OPTION
@TOKEN_OPTION
def merge_soup(
    app_url: str, token: str | None, series: str, sizes: tuple[int, ...], keep: bool, dry_run: bool
) -> None:
    """Soups of training run SERIES: workers average its last N checkpoints, evaluate each soup
    on the last checkpoint's benchmarks and seeds and remove it unless kept; prints the job as
    JSON. The soups are series 'SERIES soups'."""
    body: dict = {"kind": "soup", "series": series, "keep": keep}
    if sizes:
        body["sizes"] = list(sizes)
    _submit(app_url, token, body, dry_run)


@merge.command("best")
@click.argument("series")
@click.option(
    "--objective",
    type=click.Choice(["forget_least", "net"]),
    default="forget_least",
    show_default=True,
    help="forget_least: lowest F_true keeping --keep-gains of the gains; net: best BT - F.",
)
@click.option(
    "--keep-gains",
    type=click.FloatRange(0, 1),
    default=0.8,
    show_default=True,
    help="The least share of the post model's BT_true the chosen mix keeps.",
)
@click.option("--category", default="Total", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@APP_OPTION
@TOKEN_OPTION
def merge_best(
    series: str,
    objective: str,
    keep_gains: float,
    category: str,
    fmt: str,
    app_url: str,
    token: str | None,
) -> None:
    """Which mix of sweep SERIES (its name or id) forgets least while keeping a share of the
    post model's gains, or has the best net, and whether it beats the post model beyond noise."""
    series_id = series
    if not series.isdigit():
        found = call_app(app_url, token, f"/api/series?{urlencode({'name': series})}")
        if not found:
            raise CliError(f"no series named {series!r} (see `forgetmap series list`)")
        series_id = str(found[0]["id"])
    params = urlencode({"objective": objective, "keep_gains": keep_gains, "category": category})
    choice = call_app(app_url, token, f"/api/series/{series_id}/merge-choice?{params}")
    if fmt == "json":
        click.echo(json.dumps(choice, indent=2))
        return
    rows: list[tuple[str, ...]] = [
        (
            f"{m['mix']:g}" + (" *" if m["mix"] == choice["mix"] else ""),
            f"{m['f_true']:.3f}",
            f"[{m['f_low']:.3f}, {m['f_high']:.3f}]",
            f"{m['bt_true']:.3f}",
        )
        for m in choice["mixes"]
    ]
    echo_columns(("mix", "F_true", "95% interval", "BT_true"), rows, right=frozenset({1, 2, 3}))
    click.echo(f"{category}: mix {choice['mix']:g}. {choice['reason']}.")
    if choice["one_seed"]:
        click.echo("one seed: no interval, so 'beyond noise' cannot be told")
