"""Sample identity that survives prompt templates (for harness files without document ids).

A base model is usually prompted few-shot and its post-trained descendant through a chat template,
so the same question reaches the two models inside different queries. Keying a sample by a hash
of its query therefore pairs nothing. Here a sample is keyed by its **question**:

1. ``shared_affixes``: within one (task, run) file, the longest prefix and suffix that *every* query
   shares (few-shot block, instructions, answer cue) are removed, cut back to a whitespace
   boundary so that a word shared by chance is not split. A file with one query keeps it whole.
2. ``normalize``: whitespace runs become one space, quote characters are dropped (templates wrap
   questions in quotes or not, straight or curly), case is folded.
3. ``identify``: ``q:`` + the first 16 hex digits of md5(normalized question, normalized
   choices, gold), computed in DuckDB over the whole import at once (vectorized, no per-row Python).
   md5 is an identity hash here, not a security measure.

4. ``link_candidates`` (at pairing time): samples of a benchmark still unpaired after (1)-(3) are
   matched by the question text one side's prompt contains, when that match is unique both ways.

Two different samples of one file that share a key cannot be told apart by content; pairing them by
row order would be a guess (files are written in a shuffled order). They are stored under
``<key>~ambiguous<n>``, excluded from pairing and reported as ambiguous. Ids given by the file
(lm-eval ``doc_id``, lighteval's doc ``id``) are used as they are and need none of this.
"""

from __future__ import annotations

import os
import re

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "AMBIGUOUS_MARK",
    "QUESTION_KEY_PREFIX",
    "identify",
    "link_candidates",
    "question_from_prompts",
    "normalize",
    "normalize_text",
    "shared_affixes",
]

QUESTION_KEY_PREFIX = "q:"
"""Sample ids made from the question carry this prefix (the pair report names the rule by it)."""

AMBIGUOUS_MARK = "~ambiguous"
"""Suffix of sample ids that stand for several samples with the same key (never paired)."""

# straight, curly, low and angle quotes, and backticks: templates differ in all of them
_QUOTES = "[\"'`\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f\u00ab\u00bb\u2039\u203a]"


_QUOTES_SQL = _QUOTES.replace("'", "''")


def shared_affixes(queries: list[str]) -> tuple[int, int]:
    """Lengths (in characters) of the prefix and suffix that every query shares.

    Both are cut back to a whitespace boundary (the removed part ends, or the kept part starts,
    after whitespace) and never overlap the shortest query's middle. With fewer than two distinct
    queries nothing is shared: a single query is all question.
    """
    distinct = set(queries)
    if len(distinct) < 2:
        return 0, 0
    reversed_ = [q[::-1] for q in distinct]
    return _affixes(
        min(distinct), max(distinct), min(reversed_), max(reversed_), min(map(len, distinct))
    )


def _back_to_space(shared: str, *, from_end: bool) -> int:
    """Length of ``shared`` cut so that it ends (prefix) or starts (suffix) at whitespace."""
    if not shared:
        return 0
    if from_end:
        if shared[-1].isspace():
            return len(shared)
        cut = max(shared.rfind(" "), shared.rfind("\n"), shared.rfind("\t"))
        return cut + 1
    if shared[0].isspace():
        return len(shared)
    cuts = [i for i in (shared.find(" "), shared.find("\n"), shared.find("\t")) if i >= 0]
    return len(shared) - min(cuts) if cuts else 0


def normalize(texts: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Whitespace runs to one space, quotes dropped, case folded, ends trimmed."""
    out = pc.replace_substring_regex(texts, _QUOTES, "")
    out = pc.replace_substring_regex(out, r"\s+", " ")
    return pc.utf8_trim_whitespace(pc.utf8_lower(out))


def _normalized_sql(expr: str) -> str:
    """``normalize`` in DuckDB SQL (the same RE2 patterns)."""
    return (
        f"trim(lower(regexp_replace(regexp_replace({expr}, '{_QUOTES_SQL}', '', 'g'), "
        f"'\\s+', ' ', 'g')))"
    )


def _register_affixes(con, source: str, unit: str, text: str) -> None:
    """Register ``affixes`` (the unit columns, start, finish, has_ids): per unit of ``source``,
    the lengths of what every ``text`` of the unit shares at its start and end."""
    per_unit = con.sql(
        f"""
        SELECT {unit}, min({text}), max({text}), min(reverse({text})), max(reverse({text})),
               min(length({text})),
               bool_and(doc_id IS NOT NULL AND trim(doc_id) <> '') AS has_ids
        FROM {source} GROUP BY {unit}
        """
    ).fetchall()
    keys = [k.strip() for k in unit.split(",")]
    columns: dict[str, list] = {k: [] for k in keys}
    columns.update(start=[], finish=[], has_ids=[])
    for row in per_unit:
        lo, hi, rlo, rhi, shortest, has_ids = row[len(keys) :]
        start, finish = _affixes(lo or "", hi or "", rlo or "", rhi or "", shortest or 0)
        for k, v in zip(keys, row, strict=False):
            columns[k].append(v)
        columns["start"].append(start)
        columns["finish"].append(finish)
        columns["has_ids"].append(bool(has_ids))
    types = {"start": pa.int64(), "finish": pa.int64(), "has_ids": pa.bool_()}
    con.register("affixes", pa.table({k: pa.array(v, types.get(k)) for k, v in columns.items()}))


def _stripped_sql(text: str) -> str:
    """The text without its unit's shared affixes, trimmed (SQL over ``affixes`` as ``a``)."""
    return (
        f"regexp_replace(substring({text}, a.start + 1, length({text}) - a.start - a.finish), "
        "'^\\s+|\\s+$', '', 'g')"
    )


def question_from_prompts(table: pa.Table) -> pa.Array:
    """The ``question`` column where given, else each ``prompt`` without what every prompt of its
    (model, benchmark, seed) shares (few-shot block, instructions, answer cue): what lists show."""
    con = duckdb.connect()
    try:
        rows = table.select(["model", "benchmark", "seed", "prompt", "question"])
        rows = rows.append_column("pos", pa.array(np.arange(table.num_rows, dtype=np.int64)))
        rows = rows.append_column("doc_id", pa.nulls(table.num_rows, pa.string()))
        con.register("rows_in", rows)
        _register_affixes(con, "rows_in WHERE question IS NULL", "model, benchmark, seed", "prompt")
        result = con.sql(
            f"""
            SELECT coalesce(r.question, {_stripped_sql("r.prompt")}) AS question
            FROM rows_in r LEFT JOIN affixes a USING (model, benchmark, seed)
            ORDER BY r.pos
            """
        ).to_arrow_table()
    finally:
        con.close()
    return result["question"].combine_chunks()


def identify(table: pa.Table) -> tuple[pa.Array, pa.Array]:
    """Sample ids and question texts for rows of many (task, run) files at once.

    ``table`` has ``unit`` (one value per task and run), ``query``, ``choices_key`` and ``gold_key``
    (normalized, may be null) and ``doc_id``. A unit whose rows all carry a document id keeps the
    ids. Otherwise each row's id is ``q:`` + 16 hex digits of md5(normalized question, choices,
    gold), where the question is the query without what all queries of its unit share (see
    ``shared_affixes``); keys shared by several rows of one unit get ``~ambiguous<n>``.
    Returns (sample_id, question), the question trimmed but not normalized (for display).
    """
    con = duckdb.connect()
    try:
        rows = table.select(["unit", "query", "choices_key", "gold_key", "doc_id"])
        rows = rows.append_column("pos", pa.array(np.arange(table.num_rows, dtype=np.int64)))
        con.register("rows_in", rows)
        _register_affixes(con, "rows_in", "unit", "query")
        result = con.sql(
            f"""
            WITH q AS (
                SELECT r.pos, r.unit, r.doc_id, a.has_ids, r.choices_key, r.gold_key,
                       {_stripped_sql("r.query")} AS question
                FROM rows_in r JOIN affixes a USING (unit)
            ), k AS (
                SELECT *, '{QUESTION_KEY_PREFIX}' || left(md5(
                           coalesce({_normalized_sql("question")}, '') || chr(31) ||
                           coalesce(choices_key, '') || chr(31) || coalesce(gold_key, '')), 16) AS key
                FROM q
            ), c AS (
                SELECT pos, question, has_ids, doc_id, key,
                       count(*) OVER (PARTITION BY unit, key) AS n,
                       row_number() OVER (PARTITION BY unit, key ORDER BY pos) AS nth
                FROM k
            )
            SELECT CASE WHEN has_ids THEN trim(doc_id)
                        WHEN n > 1 THEN key || '{AMBIGUOUS_MARK}' || nth
                        ELSE key END AS sample_id,
                   question
            FROM c ORDER BY pos
            """
        ).to_arrow_table()
    finally:
        con.close()
    return result["sample_id"].combine_chunks(), result["question"].combine_chunks()


def _affixes(lo: str, hi: str, rlo: str, rhi: str, shortest: int) -> tuple[int, int]:
    """``shared_affixes`` from a unit's extreme queries (forward and reversed): every query shares
    the common prefix of the smallest and the largest, and likewise for suffixes."""
    if lo == hi:
        return 0, 0
    prefix = os.path.commonprefix([lo, hi])
    suffix = os.path.commonprefix([rlo, rhi])[::-1]
    p = _back_to_space(prefix, from_end=True)
    s = _back_to_space(suffix, from_end=False)
    if p + s > shortest:
        s = max(shortest - p, 0)
    return p, s


_QUOTES_RE = re.compile(_QUOTES)
_SPACE_RE = re.compile(r"\s+")

MIN_LINK_CHARS = 20
"""A question shorter than this (normalized) is too generic to be found inside another prompt."""

MAX_LINK_COMPARISONS = 25_000_000
"""Above this many (base, post) candidates in one benchmark, linking by text is skipped."""


def normalize_text(text: str | None) -> str:
    """``normalize`` for one Python string (same rules)."""
    if not text:
        return ""
    return _SPACE_RE.sub(" ", _QUOTES_RE.sub("", text)).lower().strip()


def link_candidates(
    base: list[tuple[str, str | None, str | None]],
    post: list[tuple[str, str | None, str | None]],
) -> list[tuple[str, str]]:
    """Match samples whose keys differ by the question text one side's prompt contains.

    ``base`` and ``post`` are (sample_id, question, prompt) of one benchmark's still-unpaired
    samples. A base sample and a post sample are candidates when the normalized question of either
    is contained in the normalized prompt of the other. A link is made only when it is unique both
    ways (the base sample has exactly one candidate and so has the post sample): a wrong pairing
    is worse than none. Returns (base_sample_id, post_sample_id) links.
    """
    if not base or not post or len(base) * len(post) > MAX_LINK_COMPARISONS:
        return []
    b = [(sid, normalize_text(q), normalize_text(p)) for sid, q, p in base]
    p = [(sid, normalize_text(q), normalize_text(pr)) for sid, q, pr in post]
    edges: set[tuple[int, int]] = set()
    for i, (_, question, _) in enumerate(b):
        if len(question) >= MIN_LINK_CHARS:
            edges.update((i, j) for j, (_, _, prompt) in enumerate(p) if question in prompt)
    for j, (_, question, _) in enumerate(p):
        if len(question) >= MIN_LINK_CHARS:
            edges.update((i, j) for i, (_, _, prompt) in enumerate(b) if question in prompt)
    per_base: dict[int, int] = {}
    per_post: dict[int, int] = {}
    for i, j in edges:
        per_base[i] = per_base.get(i, 0) + 1
        per_post[j] = per_post.get(j, 0) + 1
    return sorted((b[i][0], p[j][0]) for i, j in edges if per_base[i] == 1 and per_post[j] == 1)
