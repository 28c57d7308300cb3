"""`forgetmap pair add|list|suggest`: base -> post-trained model pairs."""

from __future__ import annotations

import click
from forgetmap.cli.common import CliError, echo_columns, store_of
from forgetmap.core.errors import InputError
from forgetmap.core.stages import STAGE_NAMES, Stage, parse_stage


def _checked_stage(ctx: click.Context, param: click.Parameter, value: str | None) -> Stage | None:
    """``--stage`` through the one stage check the API's bodies use (forgetmap.core.stages): a stage
    not in the list is refused in one line, before anything is opened or sent."""
    if value is None:
        return None
    try:
        return parse_stage(value, where="--stage")
    except InputError as exc:
        raise CliError(str(exc)) from exc


def stage_option(what: str):
    """The ``--stage`` option of every command that stores a pair's stage."""
    return click.option(
        "--stage",
        callback=_checked_stage,
        metavar="STAGE",
        help=f"{what}: {', '.join(STAGE_NAMES)}.",
    )


@click.group()
def pair() -> None:
    """Base -> post-trained model pairs."""


@pair.command("add")
@click.argument("base")
@click.argument("post")
@click.option("--label", help="Display label, e.g. 'Qwen2.5-7B -> Instruct'.")
@stage_option("Post-training stage")
@click.pass_context
def pair_add(
    ctx: click.Context, base: str, post: str, label: str | None, stage: Stage | None
) -> None:
    """Pair BASE with its post-trained descendant POST and compute their transition counts."""
    from forgetmap.db.pairing import add_pair
    from forgetmap.db.queries import pairing_report

    store = store_of(ctx)
    try:
        with store.transaction() as conn:
            pair_id, created, unpaired = add_pair(conn, base, post, label=label, stage=stage)
            # read in the same transaction: closing the file and opening it again for the
            # report cost a paper-sized database 0.05 s (median of 6 alternating runs)
            report = pairing_report(conn, pair_id)
    except InputError as exc:
        raise CliError(str(exc)) from exc
    finally:
        store.close()
    click.echo(f"{'added' if created else 'updated'} pair {pair_id}: {base} -> {post}")
    _print_pairing(report, unpaired)


def _print_pairing(report: list[dict], unpaired: dict) -> None:
    """Per benchmark: what paired and by which rule; a hint when nothing paired."""
    from forgetmap.db.queries import pairing_rule

    if report:
        echo_columns(
            (
                "benchmark",
                "seeds",
                "paired",
                "only base",
                "only post",
                "ambiguous",
                "mismatched",
                "rule",
            ),
            [
                (
                    row["benchmark"],
                    str(row["seeds"]),
                    f"{row['paired']:,}",
                    f"{row['only_base']:,}",
                    f"{row['only_post']:,}",
                    f"{row['ambiguous']:,}",
                    f"{row['mismatched']:,}",
                    pairing_rule(row),
                )
                for row in report
            ],
            right=frozenset(range(1, 7)),
        )
    paired = sum(r["paired"] for r in report)
    click.echo(
        f"paired {paired:,} samples on {sum(1 for r in report if r['paired'])} of "
        f"{len(report)} benchmarks; {unpaired['only_base']:,} only in base, "
        f"{unpaired['only_post']:,} only in post, {unpaired.get('ambiguous', 0):,} ambiguous, "
        f"{unpaired['mismatched']:,} with mismatched documents (excluded from the counts)"
    )
    if not paired:
        click.echo(
            "nothing paired: samples pair on (benchmark, sample id, seed). Check that both models "
            "ran the same benchmarks (same task names) with the same seeds "
            "(`forgetmap pair list`, the importer's summary), and that the files give document "
            "ids or the same questions."
        )


@pair.command("list")
@click.pass_context
def pair_list(ctx: click.Context) -> None:
    """List pairs with their coverage."""
    from forgetmap.db.queries import list_pairs

    store = store_of(ctx)
    with store.read() as conn:
        pairs = list_pairs(conn)
    store.close()
    if not pairs:
        click.echo("no pairs yet: import results, then `forgetmap pair add BASE POST`")
        return
    echo_columns(
        ("id", "base", "post", "label", "stage", "benchmarks", "seeds", "paired samples"),
        [
            (
                str(p["id"]),
                p["base"],
                p["post"],
                p["label"] or "",
                p["stage"] or "",
                str(p["benchmarks"]),
                str(p["seeds"]),
                f"{p['paired_samples']:,}",
            )
            for p in pairs
        ],
        right=frozenset({0, 5, 6, 7}),
    )


@pair.command("suggest")
@click.option("--accept", help="Add suggestions as pairs: 'all', or their numbers (e.g. 1,3).")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@click.pass_context
def pair_suggest(ctx: click.Context, accept: str | None, fmt: str) -> None:
    """Propose base -> post pairs among the stored models, from model cards' base_model in the
    local hub cache and from names (X -> X-Instruct, -Chat, -it, -SFT, -DPO); with --accept, add
    them."""
    import json

    from forgetmap.services.pair_suggest import accept as accept_suggestions
    from forgetmap.services.pair_suggest import stored_suggestions, suggestion_record

    store = store_of(ctx)
    try:
        suggestions = stored_suggestions(store)
        chosen = _chosen(accept, len(suggestions)) if accept else []
        added = accept_suggestions(store, [suggestions[number - 1] for number in chosen])
    except InputError as exc:
        raise CliError(str(exc)) from exc
    finally:
        store.close()
    if fmt == "json":
        added_ids = {(s.base, s.post): pair_id for pair_id, s in added}
        click.echo(
            json.dumps(
                [
                    {**suggestion_record(s, i), "added_pair": added_ids.get((s.base, s.post))}
                    for i, s in enumerate(suggestions, 1)
                ],
                indent=2,
            )
        )
        return
    if not suggestions:
        click.echo(
            "no pairs to suggest: every base/post pair the names or cached model cards "
            "show is already a pair (or import more models)"
        )
        return
    echo_columns(
        ("#", "base", "post", "evidence", "stage"),
        [
            (str(i), s.base, s.post, ", ".join(s.evidence), s.stage or "")
            for i, s in enumerate(suggestions, 1)
        ],
        right=frozenset({0}),
    )
    for pair_id, s in added:
        click.echo(f"added pair {pair_id}: {s.base} -> {s.post}")
    if not accept:
        click.echo("accept with `forgetmap pair suggest --accept all` (or --accept 1,3)")


def _chosen(accept: str, count: int) -> list[int]:
    """Suggestion numbers from --accept ('all' or '1,3')."""
    if accept.strip().lower() == "all":
        return list(range(1, count + 1))
    try:
        numbers = [int(n) for n in accept.split(",") if n.strip()]
    except ValueError:
        raise CliError(f"--accept takes 'all' or numbers like 1,3, got {accept!r}") from None
    wrong = [n for n in numbers if not 1 <= n <= count]
    if wrong:
        raise CliError(f"--accept: no suggestion {wrong[0]} (there are {count})")
    return list(dict.fromkeys(numbers))
