"""`forgetmap map`: the forgetting map as JSON, CSV or a table."""

from __future__ import annotations

import click
from forgetmap.cli.common import (
    echo_columns,
    echo_records,
    format_value,
    plus_minus,
    store_of,
)
from forgetmap.core.vocabularies import AGGREGATES, LEVELS


@click.command("map")
@click.option("--level", type=click.Choice(LEVELS), default="category", show_default=True)
@click.option("--aggregate", type=click.Choice(AGGREGATES), default="macro", show_default=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "csv", "table"]),
    default="table",
    show_default=True,
)
@click.option(
    "--exclude",
    "exclude",
    metavar="CAUSES",
    help="Leave out the samples whose answer (either side's) had one of these causes, from every "
    "count, interval and noise floor: no_answer, truncated, refused (comma-separated). An answer "
    "with no extractable option or cut off by the token limit scores wrong without the model "
    "having shown it lost anything.",
)
@click.option(
    "--exclude-truncated",
    is_flag=True,
    help="The same as --exclude truncated.",
)
@click.option(
    "--scores",
    metavar="NAME",
    help="Grade with the score set NAME (`forgetmap rescore`) instead of the harness's own "
    "scores; each record then says how far F_true moved (f_true_shift) and whether by more than "
    "its interval (depends_on_extractor).",
)
@click.option(
    "--probes",
    is_flag=True,
    help="Add what asking again found (`forgetmap probe`), from each pair's newest probe: "
    "n_10_probed, n_10_recovered and recovered_control (the shuffled control's count on the same "
    "flips, to read the recovered count against), always together (JSON and CSV).",
)
@click.pass_context
def map_command(
    ctx: click.Context,
    level: str,
    aggregate: str,
    fmt: str,
    exclude: str | None,
    exclude_truncated: bool,
    scores: str | None,
    probes: bool,
) -> None:
    """The forgetting map: chance-adjusted F_true / BT_true per pair and category or benchmark."""
    from forgetmap.core.answer_status import parse_exclude
    from forgetmap.core.errors import InputError
    from forgetmap.services.extractor_shift import SHIFT_FIELDS
    from forgetmap.services.map import (
        BENCHMARK_EXTRA,
        BENCHMARK_FIELDS,
        CATEGORY_EXTRA,
        CATEGORY_FIELDS,
        MapQuery,
    )
    from forgetmap.services.map_cache import map_records
    from forgetmap.services.probe_cells import PROBE_FIELDS, with_newest_probes

    try:
        causes = parse_exclude(exclude) | ({"truncated"} if exclude_truncated else set())
    except InputError as e:
        raise click.UsageError(str(e)) from None
    store = store_of(ctx)
    try:
        query = MapQuery(level=level, aggregate=aggregate, exclude=causes, scores=scores)
        records = map_records(store, query)
        if probes:
            records = with_newest_probes(store, records, level)
    except InputError as e:
        raise click.UsageError(str(e)) from None
    finally:
        store.close()
    fields = (
        (
            (BENCHMARK_FIELDS + BENCHMARK_EXTRA)
            if level == "benchmark"
            else (CATEGORY_FIELDS + CATEGORY_EXTRA)
        )
        + (SHIFT_FIELDS if scores else ())
        + (PROBE_FIELDS if probes else ())
    )
    if fmt in ("json", "csv"):
        echo_records(records, fields, fmt)
    else:
        if not records:
            click.echo(_empty_map_hint(ctx))
            return
        _print_table(records, level)
        if scores:
            click.echo(_extractor_note(records, level, scores))


def _empty_map_hint(ctx: click.Context) -> str:
    """Why the map is empty and what to try."""
    from forgetmap.db.queries import list_pairs

    store = store_of(ctx)
    try:
        with store.read() as conn:
            pairs = list_pairs(conn)
    finally:
        store.close()
    if not pairs:
        return (
            "the map is empty: import results for two models, then `forgetmap pair add BASE POST`"
        )
    names = ", ".join(f"{p['base']} -> {p['post']}" for p in pairs[:5])
    return (
        f"the map is empty: {len(pairs)} pair(s) ({names}) paired no samples. Samples pair on "
        "(benchmark, sample id, seed): check that both models ran the same benchmarks (same task "
        "names) with the same seeds; `forgetmap pair add BASE POST` prints per benchmark what "
        "each side has"
    )


def _print_table(records: list[dict], level: str) -> None:
    """The map as plain columns (names as typed: no markup), a pair's categories up to its Total
    as one block."""
    if level == "category":
        click.echo(
            "F_true / BT_true (mean ± std across seeds; 95%: the paired interval, valid for "
            "adaptive runs; n: paired samples per seed)"
        )
        headers: tuple[str, ...]
        rows: list[tuple[str, ...]]
        headers = (
            "pair",
            "category",
            "bench",
            "seeds",
            "n",
            "F_true",
            "F_true 95%",
            "BT_true",
            "BT_true 95%",
            "F",
            "BT",
            "F_max",
            "noise",
            "1->0 no answer",
            "1->0 cut",
        )
        rows = [
            (
                f"{r['base']} -> {r['post']}",
                r["category"],
                str(r["n_benchmarks"]),
                str(r["seeds"]),
                _n_used(r),
                plus_minus(r["f_true"], r["f_true_std"]),
                _interval(r["f_true_low"], r["f_true_high"]),
                plus_minus(r["bt_true"], r["bt_true_std"]),
                _interval(r["bt_true_low"], r["bt_true_high"]),
                format_value(r["f"]),
                format_value(r["bt"]),
                format_value(r["f_max"]),
                format_value(r["noise_floor"]),
                str(r["n_10_no_answer"]),
                str(r["n_10_truncated"]),
            )
            for r in records
        ]
        ends = frozenset(i for i, r in enumerate(records) if r["category"] == "Total")
        echo_columns(
            headers, rows, right=frozenset(range(2, len(headers))), sep=" │ ", breaks=ends, keep=2
        )
        return
    click.echo(
        "per benchmark and seed (95%: the paired interval over all seeds, valid for adaptive runs;"
        " 1->0 no answer / cut: flips whose answer gave no extractable option / was cut off by"
        " the token limit)"
    )
    headers = (
        "pair",
        "benchmark",
        "seed",
        "n",
        "k",
        "acc_pre",
        "acc_post",
        "F",
        "BT",
        "F_true",
        "F_true 95%",
        "BT_true",
        "BT_true 95%",
        "p",
        "1->0 no answer",
        "1->0 cut",
    )
    rows = [
        (
            f"{r['base']} -> {r['post']}",
            r["benchmark"],
            str(r["seed"]),
            _n_used(r),
            str(r["num_choices"] or ("mixed" if r["k_mix"] else "gen")),
            format_value(r["acc_pre"]),
            format_value(r["acc_post"]),
            format_value(r["f"]),
            format_value(r["bt"]),
            format_value(r["f_true"]),
            _interval(r["f_true_low"], r["f_true_high"]),
            format_value(r["bt_true"]),
            _interval(r["bt_true_low"], r["bt_true_high"]),
            f"{r['mcnemar_p']:.3g}",
            f"{r['n_10_no_answer']} of {r['n_10']}",
            f"{r['n_10_truncated']} of {r['n_10']}",
        )
        for r in records
    ]
    echo_columns(headers, rows, right=frozenset(range(2, len(headers))), sep=" │ ", keep=3)


def _extractor_note(records: list[dict], level: str, scores: str) -> str:
    """Which cells of a score set's map depend on the extractor (names as typed: no markup)."""
    column = "benchmark" if level == "benchmark" else "category"
    marked = [r for r in records if r["depends_on_extractor"]]
    cells = "; ".join(
        f"{r['base']} -> {r['post']} / {r[column]}"
        + (f" (seed {r['seed']})" if level == "benchmark" else "")
        + f": F_true {r['f_true_shift']:+.4f}"
        for r in marked
    )
    return (
        f"graded by score set {scores}: {len(marked)} of {len(records)} records move F_true "
        f"by more than their interval from the harness's grades (depend on the extractor)"
        + (f": {cells}" if cells else "")
    )


def _n_used(record: dict) -> str:
    """Paired samples per seed, and "n of N (partial)" where fewer were evaluated than exist."""
    if record["partial"]:
        return f"{record['n']} of {record['full_size']} (partial)"
    return str(record["n"])


def _interval(low: float | None, high: float | None) -> str:
    """The paired 95% interval as [low, high] (empty where it could not be computed)."""
    if low is None or high is None:
        return ""
    return f"[{format_value(low)}, {format_value(high)}]"
