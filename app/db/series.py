"""Checkpoint series: reads and writes of ``series``, ``series_checkpoints`` and the watcher's
``watch_submissions`` (all SQL of the series feature lives here; app/services/series.py holds the
logic)."""

from __future__ import annotations

from typing import Any

from forgetmap.core.errors import InputError
from forgetmap.db.pairing import add_pair
from forgetmap.db.prompts import full_prompt
from forgetmap.db.store import Connection, one_row

# How a question fares along a run (see ``question_histories``).
FATES = ("forgotten", "relearned", "learned", "kept", "never")


def _model_id(duck: Connection, name: str, role: str) -> int:
    row = duck.execute("SELECT id FROM models WHERE name = ?", [name]).fetchone()
    if row is None:
        raise InputError(f"unknown {role} model {name!r}; import its results first")
    return int(row[0])


def add_checkpoints(
    conn: Connection,
    name: str,
    base: str,
    checkpoints: list[tuple[str, int]],
    *,
    stage: str | None = None,
    axis: str = "step",
) -> tuple[int, bool, list[dict[str, Any]]]:
    """Create series ``name`` over ``base`` (or extend it) with (model, step) checkpoints, each
    with its (base, checkpoint) pair and counts; ``stage``: the post-training stage the run is
    (its pairs', so that a stage filter keeps the run); ``axis``: ``step`` (a training run) or
    ``mix`` (a merge sweep, steps in thousandths of the mix) or ``soup`` (a run's soups, steps the
    number of checkpoints averaged). A checkpoint already in the series
    at the same step is left as it is. Returns (series id, created, the checkpoints added)."""
    name = name.strip()
    if not name:
        raise InputError("a series needs a name, e.g. `forgetmap series add sft-run --base ...`")
    base_id = _model_id(conn, base, "base")
    row = conn.execute(
        "SELECT s.id, m.name, coalesce(s.axis, 'step') FROM series s "
        "JOIN models m ON m.id = s.base_model_id WHERE s.name = ?",
        [name],
    ).fetchone()
    created = row is None
    if row is None:
        series_id = one_row(
            conn.execute(
                "INSERT INTO series (name, base_model_id, axis) VALUES (?, ?, ?) RETURNING id",
                [name, base_id, axis],
            ).fetchone()
        )[0]
    else:
        series_id, stored_base, stored_axis = row
        if stored_base != base:
            raise InputError(
                f"series {name!r} is over base {stored_base!r}, not {base!r}; "
                "use another series name for another base"
            )
        if stored_axis != axis:
            raise InputError(
                f"series {name!r} runs along the {stored_axis}, not the {axis}; "
                "use another series name"
            )
    existing = dict(
        conn.execute(
            "SELECT c.step, m.name FROM series_checkpoints c JOIN models m ON m.id = c.model_id "
            "WHERE c.series_id = ?",
            [series_id],
        ).fetchall()
    )
    at_step = {model: step for step, model in existing.items()}
    added = []
    for model, step in checkpoints:
        if step < 0:
            raise InputError(f"step of {model!r} must be >= 0, got {step}")
        if model == base:
            raise InputError(f"checkpoint {model!r} is the series' base model")
        if existing.get(step) == model:
            continue
        if step in existing:
            raise InputError(
                f"series {name!r} already has {existing[step]!r} at step {step}; "
                f"{model!r} needs its own step"
            )
        if model in at_step:
            raise InputError(f"{model!r} is already in series {name!r} at step {at_step[model]}")
        model_id = _model_id(conn, model, "checkpoint")
        pair_id, _, _ = add_pair(conn, base, model, label=None, stage=stage)
        conn.execute(
            "UPDATE pairs SET label = ? WHERE id = ? AND label IS NULL",
            [f"{name} @ {axis_label(axis, step)}", pair_id],
        )
        conn.execute(
            "INSERT INTO series_checkpoints (series_id, step, model_id, pair_id) "
            "VALUES (?, ?, ?, ?)",
            [series_id, step, model_id, pair_id],
        )
        existing[step], at_step[model] = model, step
        added.append({"step": step, "post": model, "pair_id": pair_id})
    return series_id, created, added


def axis_label(axis: str, step: int) -> str:
    """A checkpoint's place as a page says it: its step, its mix (thousandths -> 0.25), or the
    size of its soup."""
    if axis == "mix":
        return f"mix {step / 1000:g}"
    if axis == "soup":
        return f"soup of {step}" if step > 1 else "last checkpoint"
    return str(step)


def list_series(conn: Connection) -> list[dict[str, Any]]:
    """Every series with its base and its steps in order."""
    rows = conn.execute(
        """
        SELECT s.id, s.name, m.name, list(c.step ORDER BY c.step) FILTER (WHERE c.step IS NOT NULL),
               coalesce(s.axis, 'step')
        FROM series s
        JOIN models m ON m.id = s.base_model_id
        LEFT JOIN series_checkpoints c ON c.series_id = s.id
        GROUP BY s.id, s.name, m.name, s.axis
        ORDER BY s.id
        """
    ).fetchall()
    return [
        {"id": i, "name": n, "base": b, "steps": steps or [], "axis": axis}
        for i, n, b, steps, axis in rows
    ]


def get_series(
    conn: Connection, *, series_id: int | None = None, name: str | None = None
) -> dict[str, Any] | None:
    """A series with its checkpoints in step order, by id or name (None if there is none)."""
    row = conn.execute(
        "SELECT s.id, s.name, s.base_model_id, m.name, coalesce(s.axis, 'step') FROM series s "
        "JOIN models m ON m.id = s.base_model_id WHERE s.id = ? OR s.name = ?",
        [series_id, name],
    ).fetchone()
    if row is None:
        return None
    checkpoints = conn.execute(
        "SELECT c.step, m.name, c.model_id, c.pair_id FROM series_checkpoints c "
        "JOIN models m ON m.id = c.model_id WHERE c.series_id = ? ORDER BY c.step",
        [row[0]],
    ).fetchall()
    return {
        "id": row[0],
        "name": row[1],
        "base_model_id": row[2],
        "base": row[3],
        "axis": row[4],
        "checkpoints": [
            {"step": s, "post": m, "model_id": mid, "pair_id": pid}
            for s, m, mid, pid in checkpoints
        ],
    }


def pair_steps(conn: Connection) -> dict[int, tuple[int, str, int]]:
    """pair id -> (series id, series name, step) for every pair that belongs to a training run
    (a merge sweep's or a soup's series holds pairs of other runs and pairs: not here)."""
    rows = conn.execute(
        "SELECT c.pair_id, s.id, s.name, c.step FROM series_checkpoints c "
        "JOIN series s ON s.id = c.series_id WHERE coalesce(s.axis, 'step') = 'step' "
        "ORDER BY s.id, c.step"
    ).fetchall()
    return {pair_id: (sid, name, step) for pair_id, sid, name, step in rows}


# ------------------------------------------------------------------------- question histories

_HISTORY_SQL = """
WITH ck AS (
    SELECT model_id, step FROM series_checkpoints WHERE series_id = $series
), per_model AS (
    -- a model knows a question when it answers it correctly in at least half of its seeds
    SELECT r.benchmark_id, r.sample_id, r.model_id,
           list(r.correct::INT ORDER BY r.seed) AS correct,
           avg(r.correct::INT) >= 0.5 AS known
    FROM results r
    WHERE (r.model_id = $base OR r.model_id IN (SELECT model_id FROM ck))
      AND ($benchmarks IS NULL OR list_contains($benchmarks, r.benchmark_id))
    GROUP BY r.benchmark_id, r.sample_id, r.model_id
), per_question AS (
    SELECT q.benchmark_id, q.sample_id,
           bool_or(q.known) FILTER (WHERE q.model_id = $base) AS base_known,
           any_value(q.correct) FILTER (WHERE q.model_id = $base) AS base_correct,
           min(ck.step) FILTER (WHERE NOT q.known) AS first_unknown,
           max(ck.step) FILTER (WHERE q.known) AS last_known,
           arg_max(q.known, ck.step) AS known_at_end,
           list({'step': ck.step, 'correct': q.correct, 'known': q.known} ORDER BY ck.step)
               FILTER (WHERE ck.step IS NOT NULL) AS history
    FROM per_model q LEFT JOIN ck ON ck.model_id = q.model_id
    GROUP BY q.benchmark_id, q.sample_id
), fated AS (
    SELECT *,
           CASE WHEN base_known THEN first_unknown END AS first_forgotten,
           CASE
             WHEN base_known IS NULL OR history IS NULL THEN NULL
             WHEN base_known AND first_unknown IS NULL THEN 'kept'
             WHEN base_known AND known_at_end THEN 'relearned'
             WHEN base_known THEN 'forgotten'
             WHEN known_at_end THEN 'learned'
             ELSE 'never'
           END AS fate
    FROM per_question
)
"""


def question_histories(
    conn: Connection,
    series: dict[str, Any],
    *,
    benchmarks: list[int] | None,
    fate: str | None,
    page: int,
    page_size: int,
    sample_id: str | None = None,
) -> tuple[int, dict[str, int], list[dict[str, Any]]]:
    """Each question's correctness along a series: at the base and at every checkpoint, all seeds.

    A model *knows* a question when it is correct in at least half of its seeds. Fates:
    ``forgotten`` (the base knew it, a checkpoint lost it, the last checkpoint does not know it),
    ``relearned`` (lost, then known again at the last step), ``learned`` (the base did not know it,
    the last checkpoint does), ``kept`` and ``never``. Questions the base or no checkpoint answered
    are left out. Returns (matching questions, count per fate, this page's rows). ``sample_id``
    narrows the page to that question (of ``benchmarks``); the counts stay those of all of them.
    """
    if fate is not None and fate not in FATES:
        raise InputError(f"fate must be one of {', '.join(FATES)}, got {fate!r}")
    # one statement: the histories are aggregated once for both the counts and the page
    counts_rows = one_row(
        conn.execute(
            _HISTORY_SQL
            + """
        , counts AS (
            SELECT coalesce(list({'fate': fate, 'n': n}), []) AS c
            FROM (SELECT fate, count(*) AS n FROM fated WHERE fate IS NOT NULL GROUP BY fate)
        ), page AS (
            SELECT coalesce(list({'benchmark': benchmark, 'category': category,
                                  'sample_id': sample_id, 'fate': fate,
                                  'first_forgotten': first_forgotten, 'last_known': last_known,
                                  'base_correct': base_correct,
                                  'history': history, 'prompt': prompt} ORDER BY rank), []) AS r
            FROM (
                SELECT b.name AS benchmark, b.category, f.sample_id, f.fate, f.first_forgotten,
                       f.last_known, f.base_correct, f.history,
                       (SELECT any_value("""
            + full_prompt("r")
            + """) FROM results r WHERE r.model_id = $base
                          AND r.benchmark_id = f.benchmark_id AND r.sample_id = f.sample_id) AS prompt,
                       row_number() OVER (ORDER BY f.first_forgotten NULLS LAST, b.name, f.sample_id)
                           AS rank
                FROM fated f JOIN benchmarks b ON b.id = f.benchmark_id
                WHERE f.fate IS NOT NULL AND ($fate IS NULL OR f.fate = $fate)
                  AND ($sample IS NULL OR f.sample_id = $sample)
                ORDER BY rank
                LIMIT $limit OFFSET $offset
            )
        )
        SELECT counts.c, page.r FROM counts, page
        """,  # noqa: E501
            {
                "series": series["id"],
                "base": series["base_model_id"],
                "benchmarks": benchmarks,
                "fate": fate,
                "sample": sample_id,
                "limit": page_size,
                "offset": (page - 1) * page_size,
            },
        ).fetchone()
    )
    counts = {c["fate"]: c["n"] for c in counts_rows[0]}
    rows = counts_rows[1]
    total = counts.get(fate, 0) if fate else sum(counts.values())
    return (len(rows) if sample_id is not None else total), counts, rows


# ---------------------------------------------------------------------------------- watcher


def submission(conn: Connection, series_id: int, path: str) -> dict[str, Any] | None:
    """What the watcher submitted for a checkpoint folder, with its job's status."""
    row = conn.execute(
        "SELECT w.step, w.job_id, w.attempts, j.status FROM watch_submissions w "
        "LEFT JOIN jobs j ON j.id = w.job_id WHERE w.series_id = ? AND w.path = ?",
        [series_id, path],
    ).fetchone()
    if row is None:
        return None
    return dict(zip(("step", "job_id", "attempts", "job_status"), row, strict=True))


def record_submission(
    conn: Connection, series_id: int, path: str, step: int, model: str, job_id: int
) -> None:
    """Remember (or count one more attempt of) the job that evaluates a checkpoint folder."""
    conn.execute(
        """
        INSERT INTO watch_submissions (series_id, path, step, model_id, job_id, attempts)
        SELECT ?, ?, ?, id, ?, 1 FROM models WHERE name = ?
        ON CONFLICT (series_id, path) DO UPDATE
            SET job_id = excluded.job_id, attempts = watch_submissions.attempts + 1,
                submitted_at = now()
        """,
        [series_id, path, step, job_id, model],
    )


def covered_by_shards(
    conn: Connection, model: str, benchmarks: list[list[str]], seeds: list[int], chash: str
) -> bool:
    """Whether every (benchmark, seed) of ``model`` under eval config ``chash`` is evaluated or on
    its way (a shard queued, running, done or reused). ``benchmarks``: per benchmark, the names its
    shards may carry (as requested and as stored)."""
    for names in benchmarks:
        for seed in seeds:
            found = one_row(
                conn.execute(
                    f"""
                    SELECT count(*) FROM shards s JOIN models m ON m.id = s.model_id
                    WHERE m.name = ? AND s.seed = ? AND s.config_hash = ?
                      AND s.status IN ('queued', 'running', 'done', 'reused')
                      AND s.benchmark IN ({", ".join("?" for _ in names)})
                    """,
                    [model, seed, chash, *names],
                ).fetchone()
            )[0]
            if not found:
                return False
    return True
