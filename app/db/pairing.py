"""Pairing counts: the transition, coverage and seed-vs-seed tables the map reads, and the flipped
questions the atlas reads, kept current.

``refresh_counts`` recomputes every (pair, benchmark, seed) unit that a set of touched
(model, benchmark, seed) units reaches; an import (``forgetmap.db.ingest.ingest``) and a new pair
(``add_pair``, here) call it in their transaction. Samples still unpaired after keys are
linked by question text (``link_by_text``) before counting.

All SQL here takes values as parameters; table and column names are fixed strings.
"""

from __future__ import annotations

from typing import Any

from forgetmap.core.answer_status import CAUSE_BITS
from forgetmap.core.errors import InputError
from forgetmap.core.sample_marks import AMBIGUOUS_MARK, QUESTION_KEY_PREFIX
from forgetmap.db.prompts import full_prompt
from forgetmap.db.store import Connection, one_row

CELLS = ("00", "01", "10", "11")  # a sample's cell under one seed: 2 * pre + post
JOINT_COLUMNS = ", ".join(f"n_{a}_{b}" for a in CELLS for b in CELLS)
"""cross_seed_cells' count columns: n_<cell under seed_a>_<cell under seed_b> (migration 0008)."""


def refresh_counts(
    conn: Connection, touched: str, pair_ids: list[int] | None = None
) -> tuple[list[int], dict[int, dict[str, int]]]:
    """Recompute materialized counts for every unit the rows in temp table ``touched`` reach.

    ``touched`` has columns model_id, benchmark_id, seed. A unit is (pair, benchmark, seed) for
    every pair with a touched model on either side (or only ``pair_ids`` when given). Returns the
    refreshed pair ids and, per pair, the unpaired sample counts summed over its units.
    """
    if (
        pair_ids is None
        and not conn.execute(
            f"SELECT count(*) FROM pairs WHERE base_model_id IN (SELECT model_id FROM {touched}) "
            f"OR post_model_id IN (SELECT model_id FROM {touched})"
        ).fetchall()[0][0]
    ):
        # no pair has a touched model: no transition, coverage or noise-floor count can change
        # (an import counts seed-vs-seed only for paired models; add_pair counts the rest)
        return [], {}
    pair_filter = ""
    params: list[Any] = []
    if pair_ids is not None:
        pair_filter = f"AND p.id IN ({', '.join('?' for _ in pair_ids)})"
        params = list(pair_ids)
    conn.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE affected AS
        SELECT DISTINCT p.id AS pair_id, p.base_model_id, p.post_model_id, t.benchmark_id, t.seed
        FROM pairs p JOIN (SELECT DISTINCT model_id, benchmark_id, seed FROM {touched}) t
          ON t.model_id = p.base_model_id OR t.model_id = p.post_model_id
        WHERE true {pair_filter}
        """,
        params,
    )
    conn.execute(f"CREATE OR REPLACE TEMP TABLE joined AS {joined_sql('affected')}")
    # linking by text looks for samples left unpaired on both sides of a (pair, benchmark): when
    # no unit has any, its anti-joins over both models' rows (about 1 s on the paper's layout)
    # cannot find anything
    if conn.execute(
        "SELECT count(*) FROM (SELECT pair_id, benchmark_id FROM joined GROUP BY ALL "
        "HAVING bool_or(only_base) AND bool_or(only_post))"
    ).fetchall()[0][0] and link_by_text(conn):
        conn.execute(f"CREATE OR REPLACE TEMP TABLE joined AS {joined_sql('affected')}")
    for table in ("transitions", "coverage", "question_flips"):
        conn.execute(
            f"DELETE FROM {table} USING affected a WHERE {table}.pair_id = a.pair_id "
            f"AND {table}.benchmark_id = a.benchmark_id AND {table}.seed = a.seed"
        )
    conn.execute(f"INSERT INTO transitions {transition_sql('joined')}")
    _refresh_question_flips(conn)
    conn.execute(
        """
        INSERT INTO coverage (pair_id, benchmark_id, seed, paired, only_base, only_post,
                              mismatched, ambiguous, by_question, by_text)
        SELECT pair_id, benchmark_id, seed,
               count(*) FILTER (WHERE pre IS NOT NULL AND post IS NOT NULL AND NOT mismatched),
               count(*) FILTER (WHERE only_base),
               count(*) FILTER (WHERE only_post),
               count(*) FILTER (WHERE mismatched),
               count(*) FILTER (WHERE ambiguous),
               count(*) FILTER (WHERE pre IS NOT NULL AND post IS NOT NULL AND NOT mismatched
                                AND by_question AND NOT by_text),
               count(*) FILTER (WHERE pre IS NOT NULL AND post IS NOT NULL AND NOT mismatched
                                AND by_text)
        FROM joined GROUP BY pair_id, benchmark_id, seed
        """
    )
    rows = conn.execute(
        """
        SELECT pair_id, sum(only_base::INT), sum(only_post::INT), sum(mismatched::INT),
               sum(ambiguous::INT)
        FROM joined GROUP BY pair_id ORDER BY pair_id
        """
    ).fetchall()
    _refresh_cross_seed_cells(conn)
    _refresh_seed_transitions(conn, touched, only_paired=pair_ids is None)
    conn.execute("DROP TABLE joined")
    conn.execute("DROP TABLE affected")
    unpaired = {
        pid: {"only_base": int(a), "only_post": int(b), "mismatched": int(c), "ambiguous": int(d)}
        for pid, a, b, c, d in rows
    }
    return [r[0] for r in rows], unpaired


def _refresh_question_flips(conn: Connection) -> None:
    """The atlas's rows (migration 0011): each paired sample of the refreshed units whose answer
    changed, and which way; a question flipped for the first time gets its id and its text (read
    from its base rows, so only the new questions' rows are looked up)."""
    conn.execute(
        """
        CREATE OR REPLACE TEMP TABLE flips AS
        SELECT pair_id, benchmark_id, seed, sample_id, k, pre FROM joined
        WHERE pre IS NOT NULL AND post IS NOT NULL AND NOT mismatched AND pre <> post
        """
    )
    conn.execute(
        f"""
        INSERT INTO flipped_questions (benchmark_id, sample_id, question)
        SELECT n.benchmark_id, n.sample_id, any_value(coalesce(r.question, {full_prompt("r")}))
        FROM (SELECT DISTINCT f.benchmark_id, f.sample_id FROM flips f
              ANTI JOIN flipped_questions q USING (benchmark_id, sample_id)) n
        JOIN (SELECT DISTINCT base_model_id, benchmark_id FROM affected) a USING (benchmark_id)
        JOIN results r ON r.model_id = a.base_model_id AND r.benchmark_id = n.benchmark_id
                      AND r.sample_id = n.sample_id
        GROUP BY n.benchmark_id, n.sample_id
        ORDER BY n.benchmark_id, n.sample_id
        """
    )
    conn.execute(
        "INSERT INTO question_flips "
        "SELECT f.pair_id, f.benchmark_id, q.id, f.seed, f.k, f.pre "
        "FROM flips f JOIN flipped_questions q USING (benchmark_id, sample_id)"
    )
    conn.execute("DROP TABLE flips")


def transition_sql(joined: str) -> str:
    """SQL: the ``transitions`` rows (pair, benchmark, seed, k, causes, the four cells) of the
    samples in ``joined`` (``joined_sql``'s rows)."""
    return f"""
        SELECT pair_id, benchmark_id, seed, k AS num_choices, causes,
               count(*) FILTER (WHERE NOT pre AND NOT post) AS n_00,
               count(*) FILTER (WHERE NOT pre AND post) AS n_01,
               count(*) FILTER (WHERE pre AND NOT post) AS n_10,
               count(*) FILTER (WHERE pre AND post) AS n_11
        FROM {joined} WHERE pre IS NOT NULL AND post IS NOT NULL AND NOT mismatched
        GROUP BY pair_id, benchmark_id, seed, k, causes
        """


def scored_results(score_set_id: int) -> str:
    """SQL: ``results`` as the score set ``score_set_id`` grades them (``rescored``, written by
    ``forgetmap rescore``): its ``correct`` and ``answer_status`` where it graded a row, the
    harness's elsewhere."""
    return f"""(
        SELECT r.* REPLACE (coalesce(s.correct, r.correct) AS correct,
                            coalesce(s.answer_status, r.answer_status) AS answer_status)
        FROM results r LEFT JOIN rescored s
          ON s.score_set_id = {int(score_set_id)} AND s.model_id = r.model_id
         AND s.benchmark_id = r.benchmark_id AND s.seed = r.seed AND s.sample_id = r.sample_id
    )"""


def joined_sql(units: str, results: str = "results") -> str:
    """Every sample of the (pair, benchmark, seed) units in temp table ``units`` (columns pair_id,
    base_model_id, post_model_id, benchmark_id, seed), base and post side by side: paired rows
    have both ``pre`` and ``post``; the flags say why the others did not pair. ``results``: the
    rows to read (``scored_results`` for a score set's grades)."""
    return f"""
        WITH base AS (
            SELECT a.pair_id, r.benchmark_id, r.seed, r.sample_id, r.correct, r.num_choices, r.doc_hash,
                   {cause_bits("r.answer_status")} AS causes, r.sample_id LIKE '%{AMBIGUOUS_MARK}%' AS ambiguous
            FROM {units} a JOIN {results} r
              ON r.model_id = a.base_model_id AND r.benchmark_id = a.benchmark_id AND r.seed = a.seed
        ), post AS (
            SELECT a.pair_id, r.benchmark_id, r.seed,
                   coalesce(l.base_sample_id, r.sample_id) AS sample_id,
                   l.base_sample_id IS NOT NULL AS by_text,
                   r.correct, r.num_choices, r.doc_hash, {cause_bits("r.answer_status")} AS causes,
                   r.sample_id LIKE '%{AMBIGUOUS_MARK}%' AS ambiguous
            FROM {units} a JOIN {results} r
              ON r.model_id = a.post_model_id AND r.benchmark_id = a.benchmark_id AND r.seed = a.seed
            LEFT JOIN sample_links l
              ON l.pair_id = a.pair_id AND l.benchmark_id = r.benchmark_id
             AND l.post_sample_id = r.sample_id
        )
        SELECT coalesce(b.pair_id, p.pair_id) AS pair_id,
               coalesce(b.benchmark_id, p.benchmark_id) AS benchmark_id,
               coalesce(b.seed, p.seed) AS seed,
               coalesce(b.sample_id, p.sample_id) AS sample_id,
               b.correct AS pre, p.correct AS post,
               coalesce(b.num_choices, p.num_choices, 0) AS k,
               coalesce(b.ambiguous, p.ambiguous) AS ambiguous,
               p.sample_id IS NULL AND NOT b.ambiguous AS only_base,
               b.sample_id IS NULL AND NOT p.ambiguous AS only_post,
               coalesce(b.doc_hash <> p.doc_hash, false) AS mismatched,
               coalesce(p.by_text, false) AS by_text,
               coalesce(b.sample_id LIKE '{QUESTION_KEY_PREFIX}%', false) AS by_question,
               coalesce(b.causes, 0) | coalesce(p.causes, 0) AS causes
        FROM base b FULL OUTER JOIN post p
          ON b.pair_id = p.pair_id AND b.benchmark_id = p.benchmark_id
         AND b.seed = p.seed AND b.sample_id = p.sample_id
         AND NOT b.ambiguous AND NOT p.ambiguous
        """  # noqa: E501


def cause_bits(status: str) -> str:
    """SQL: the ``causes`` bits of one answer's status column (0: answered, or not said)."""
    cases = " ".join(f"WHEN '{name}' THEN {bit}" for name, bit in CAUSE_BITS.items())
    return f"(CASE {status} {cases} ELSE 0 END)::UTINYINT"


_SEED_BOUNDS = "a.seed < ? AND b.seed > ?"
"""Bounds on the two sides of a seed-vs-seed self-join (``b.seed > a.seed``), given the largest
and the smallest seed joined: exact (a pair's earlier seed is below the largest, its later one
above the smallest), and constants, so DuckDB drops the rows of the largest seed from one side
and of the smallest from the other before the join (a third of each with three seeds)."""


def cross_seed_sql(joined: list[str]) -> str:
    """SQL: the ``cross_seed_cells`` rows of the paired samples in the ``joined`` tables
    (``joined_sql``'s rows): one self-join across seeds and one GROUP BY. Parameters: the largest
    and the smallest seed joined (``_SEED_BOUNDS``)."""
    paired = "pre IS NOT NULL AND post IS NOT NULL AND NOT mismatched"
    cells = " UNION ALL ".join(
        f"SELECT pair_id, benchmark_id, seed, sample_id, k, causes, "
        f"2 * pre::INT + post::INT AS cell FROM {table} WHERE {paired}"
        for table in joined
    )
    joint = ", ".join(
        f"count(*) FILTER (WHERE a.cell = {i} AND b.cell = {j}) AS n_{CELLS[i]}_{CELLS[j]}"
        for i in range(len(CELLS))
        for j in range(len(CELLS))
    )
    return f"""
        WITH cells AS ({cells})
        SELECT a.pair_id, a.benchmark_id, a.seed AS seed_a, b.seed AS seed_b, a.k AS num_choices,
               {joint}, a.causes | b.causes AS causes
        FROM cells a JOIN cells b
          ON b.pair_id = a.pair_id AND b.benchmark_id = a.benchmark_id
         AND b.sample_id = a.sample_id AND b.k = a.k AND b.seed > a.seed
        WHERE {_SEED_BOUNDS}
        GROUP BY a.pair_id, a.benchmark_id, a.seed, b.seed, a.k, a.causes | b.causes
        """


def _refresh_cross_seed_cells(duck: Connection) -> None:
    """Recompute ``cross_seed_cells`` of every (pair, benchmark) in temp table ``affected``: one
    self-join of the paired samples across seeds and one GROUP BY (the map's interval reads them
    with the transition counts, forgetmap.analysis.adaptive.interval_from_counts).

    A pair of seeds involves a seed the import did not touch when only some seeds were (a worker
    uploads one seed at a time): those seeds' paired rows are joined again, only then."""
    duck.execute(
        """
        CREATE OR REPLACE TEMP TABLE others AS
        SELECT DISTINCT t.pair_id, p.base_model_id, p.post_model_id, t.benchmark_id, t.seed
        FROM transitions t
        JOIN pairs p ON p.id = t.pair_id
        SEMI JOIN affected a ON a.pair_id = t.pair_id AND a.benchmark_id = t.benchmark_id
        ANTI JOIN affected x
          ON x.pair_id = t.pair_id AND x.benchmark_id = t.benchmark_id AND x.seed = t.seed
        """
    )
    joined = ["joined"]
    if duck.execute("SELECT count(*) FROM others").fetchall()[0][0]:
        duck.execute(f"CREATE OR REPLACE TEMP TABLE joined_others AS {joined_sql('others')}")
        joined.append("joined_others")
    duck.execute(
        "DELETE FROM cross_seed_cells "
        "USING (SELECT DISTINCT pair_id, benchmark_id FROM affected) a "
        "WHERE cross_seed_cells.pair_id = a.pair_id "
        "AND cross_seed_cells.benchmark_id = a.benchmark_id"
    )
    lo, hi = duck.execute(
        "SELECT min(seed), max(seed) FROM "
        "(SELECT seed FROM affected UNION ALL SELECT seed FROM others)"
    ).fetchall()[0]
    duck.execute(f"INSERT INTO cross_seed_cells {cross_seed_sql(joined)}", [hi, lo])
    duck.execute("DROP TABLE IF EXISTS joined_others")
    duck.execute("DROP TABLE others")


def link_by_text(duck: Connection) -> int:
    """Link still-unpaired samples of the pairs in temp table ``affected`` by question text.

    For each (pair, benchmark): base samples whose id no post sample has (any seed) and post
    samples likewise, neither ambiguous nor linked already, are matched by
    ``forgetmap.core.sample_identity.link_candidates``; the links go to ``sample_links``. Returns
    how many.
    """
    from forgetmap.core.sample_identity import link_candidates  # Arrow and numpy: only when linking

    def unmatched(side: str, other: str) -> str:
        """One side's samples that no sample of the other side shares an id with (any seed)."""
        return f"""
            SELECT pb.pair_id, r.benchmark_id, r.sample_id, '{side}' AS side,
                   any_value(r.question) AS question, any_value({full_prompt("r")}) AS prompt
            FROM pb JOIN results r ON r.model_id = pb.{side}_model_id
                                  AND r.benchmark_id = pb.benchmark_id
            WHERE r.sample_id NOT LIKE '%{AMBIGUOUS_MARK}%'
              AND NOT EXISTS (SELECT 1 FROM results x WHERE x.model_id = pb.{other}_model_id
                              AND x.benchmark_id = r.benchmark_id AND x.sample_id = r.sample_id)
              AND NOT EXISTS (SELECT 1 FROM sample_links l WHERE l.pair_id = pb.pair_id
                              AND l.benchmark_id = r.benchmark_id
                              AND l.{side}_sample_id = r.sample_id)
            GROUP BY pb.pair_id, r.benchmark_id, r.sample_id"""

    rows = duck.execute(
        f"""
        WITH pb AS (
            SELECT DISTINCT pair_id, base_model_id, post_model_id, benchmark_id FROM affected
        ), base AS ({unmatched("base", "post")}
        ), post AS ({unmatched("post", "base")}
        ), both_sides AS (
            SELECT pair_id, benchmark_id FROM base INTERSECT SELECT pair_id, benchmark_id FROM post
        )
        SELECT u.pair_id, u.benchmark_id, u.side, u.sample_id, u.question, u.prompt
        FROM (SELECT * FROM base UNION ALL SELECT * FROM post) u
        JOIN both_sides USING (pair_id, benchmark_id)
        ORDER BY u.pair_id, u.benchmark_id, u.side, u.sample_id
        """
    ).fetchall()
    groups: dict[tuple[int, int], dict[str, list[Any]]] = {}
    for pair_id, benchmark_id, side, sample_id, question, prompt in rows:
        group = groups.setdefault((pair_id, benchmark_id), {"base": [], "post": []})
        group[side].append((sample_id, question, prompt))
    links = [
        (pair_id, benchmark_id, base_id, post_id)
        for (pair_id, benchmark_id), group in groups.items()
        for base_id, post_id in link_candidates(group["base"], group["post"])
    ]
    if links:
        duck.executemany(
            "INSERT INTO sample_links (pair_id, benchmark_id, base_sample_id, post_sample_id) "
            "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            links,
        )
    return len(links)


def seed_transition_sql(models: str, results: str = "results") -> str:
    """SQL: the ``seed_transitions`` rows of the (model, benchmark)s in table ``models``: each
    model against itself across seeds, in ``results`` (``scored_results`` for a score set's
    grades). Parameters: the largest and the smallest seed joined (``_SEED_BOUNDS``)."""
    return f"""
        SELECT a.model_id, a.benchmark_id, a.seed AS seed_a, b.seed AS seed_b,
               coalesce(a.num_choices, b.num_choices, 0) AS num_choices,
               {cause_bits("a.answer_status")} | {cause_bits("b.answer_status")} AS causes,
               count(*) FILTER (WHERE NOT a.correct AND NOT b.correct) AS n_00,
               count(*) FILTER (WHERE NOT a.correct AND b.correct) AS n_01,
               count(*) FILTER (WHERE a.correct AND NOT b.correct) AS n_10,
               count(*) FILTER (WHERE a.correct AND b.correct) AS n_11
        FROM {models} t
        JOIN {results} a ON a.model_id = t.model_id AND a.benchmark_id = t.benchmark_id
        JOIN {results} b ON b.model_id = a.model_id AND b.benchmark_id = a.benchmark_id
         AND b.sample_id = a.sample_id AND b.seed > a.seed
        WHERE (a.doc_hash IS NULL OR b.doc_hash IS NULL OR a.doc_hash = b.doc_hash)
          AND a.sample_id NOT LIKE '%{AMBIGUOUS_MARK}%' AND {_SEED_BOUNDS}
        GROUP BY ALL
        """


def _refresh_seed_transitions(duck: Connection, touched: str, *, only_paired: bool) -> None:
    """A model against itself across seeds, for every touched (model, benchmark).

    The noise floor is shown only for pairs, so an import skips models in no pair; ``add_pair``
    computes its two models' counts when it pairs them.
    """
    paired = (
        "WHERE model_id IN (SELECT base_model_id FROM pairs UNION SELECT post_model_id FROM pairs)"
        if only_paired
        else ""
    )
    duck.execute(
        f"CREATE OR REPLACE TEMP TABLE touched_mb AS "
        f"SELECT DISTINCT model_id, benchmark_id FROM {touched} {paired}"
    )
    duck.execute(
        "DELETE FROM seed_transitions USING touched_mb t "
        "WHERE seed_transitions.model_id = t.model_id "
        "AND seed_transitions.benchmark_id = t.benchmark_id"
    )
    lo, hi = duck.execute(
        "SELECT min(r.seed), max(r.seed) FROM results r "
        "JOIN touched_mb t ON r.model_id = t.model_id AND r.benchmark_id = t.benchmark_id"
    ).fetchall()[0]
    duck.execute(f"INSERT INTO seed_transitions {seed_transition_sql('touched_mb')}", [hi, lo])
    duck.execute("DROP TABLE touched_mb")


def add_pair(
    conn: Connection, base: str, post: str, *, label: str | None, stage: str | None
) -> tuple[int, bool, dict[str, Any]]:
    """Create (or update the label of) the pair base -> post and materialize its counts.

    Returns (pair id, created, unpaired counts). Unknown model names raise InputError.
    """
    if base == post:
        raise InputError(f"a pair needs two different models, got {base!r} twice")
    ids = {}
    for role, name in (("base", base), ("post", post)):
        row = conn.execute("SELECT id FROM models WHERE name = ?", [name]).fetchone()
        if row is None:
            known = [
                r[0]
                for r in conn.execute("SELECT name FROM models ORDER BY name LIMIT 20").fetchall()
            ]
            hint = f"known models: {', '.join(known)}" if known else "no models imported yet"
            raise InputError(f"unknown {role} model {name!r}; import its results first ({hint})")
        ids[role] = row[0]
    existing = conn.execute(
        "SELECT id FROM pairs WHERE base_model_id = ? AND post_model_id = ?",
        [ids["base"], ids["post"]],
    ).fetchone()
    if existing:
        pair_id, created = existing[0], False
        if label is not None or stage is not None:
            conn.execute(
                "UPDATE pairs SET label = coalesce(?, label), stage = coalesce(?, stage) "
                "WHERE id = ?",
                [label, stage, pair_id],
            )
    else:
        pair_id = one_row(
            conn.execute(
                "INSERT INTO pairs (base_model_id, post_model_id, label, stage) "
                "VALUES (?, ?, ?, ?) RETURNING id",
                [ids["base"], ids["post"], label, stage],
            ).fetchone()
        )[0]
        created = True
    conn.execute(
        "CREATE OR REPLACE TEMP TABLE pair_units AS SELECT DISTINCT model_id, benchmark_id, seed "
        "FROM results WHERE model_id IN (?, ?)",
        [ids["base"], ids["post"]],
    )
    _, unpaired = refresh_counts(conn, "pair_units", pair_ids=[pair_id])
    conn.execute("DROP TABLE pair_units")
    return (
        pair_id,
        created,
        unpaired.get(pair_id, {"only_base": 0, "only_post": 0, "mismatched": 0, "ambiguous": 0}),
    )
