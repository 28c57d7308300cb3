"""Prompts stored as a shared template plus each row's own part (migration 0008).

``store_templates`` writes the templates an import found (app/core/prompt_templates.py) and returns
their ids; ``full_prompt`` is the SQL expression that gives a results row's whole prompt back,
for every query that shows or searches prompts. A row with a template and no prompt text is one
whose own part is its question. Rows without a template (worker uploads, units whose prompts
share little) keep their whole prompt and read as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from forgetmap.db.store import Connection

if TYPE_CHECKING:  # the store's readers use full_prompt without Arrow and numpy
    import numpy as np
    import pyarrow as pa
    from forgetmap.core.prompt_templates import UnitTemplates


def full_prompt(alias: str) -> str:
    """SQL for the whole prompt of the results row ``alias`` (a fixed table alias, not user
    input)."""
    if not alias.isidentifier():
        raise ValueError(f"not a table alias: {alias!r}")
    return (
        f"CASE WHEN {alias}.prompt_template_id IS NULL THEN {alias}.prompt ELSE "
        f"(SELECT pt.prefix || coalesce({alias}.prompt, {alias}.question) || pt.suffix "
        f"FROM prompt_templates pt "
        f"WHERE pt.id = {alias}.prompt_template_id) END"
    )


def store_templates(conn: Connection, templates: UnitTemplates) -> np.ndarray:
    """Insert each distinct (prefix, suffix) of ``templates`` once; per unit code its template id
    (-1: the unit keeps its prompts whole)."""
    import numpy as np

    ids = np.full(len(templates.has_template), -1, np.int64)
    codes = np.flatnonzero(templates.has_template)
    if not len(codes):
        return ids
    distinct: dict[tuple[str, str], int] = {}
    for code in codes.tolist():
        ids[code] = distinct.setdefault(
            (templates.prefix[code], templates.suffix[code]), len(distinct)
        )
    ids[codes] = _insert_templates(conn, list(distinct))[ids[codes]]
    return ids


def store_template_pairs(
    conn: Connection, prefix: pa.Array | pa.ChunkedArray, suffix: pa.Array | pa.ChunkedArray
) -> np.ndarray:
    """Insert each distinct (prefix, suffix) of two per-row string columns (Arrow, usually
    dictionary-encoded: one value per unit) once; per row its template id (-1 where the prefix
    is null: the row's prompt is whole; the suffix is set wherever the prefix is)."""
    import numpy as np
    import pyarrow.compute as pc
    from forgetmap.core.columns import dictionary_codes, distinct_pairs

    valid = pc.is_valid(prefix)
    has = valid.to_numpy(zero_copy_only=False)
    ids = np.full(len(has), -1, np.int64)
    if not has.any():
        return ids
    prefix_codes, prefixes = dictionary_codes(prefix.filter(valid))
    suffix_codes, suffixes = dictionary_codes(suffix.filter(valid))
    width = len(suffixes)
    wanted_p, wanted_s = distinct_pairs(prefix_codes, len(prefixes), suffix_codes, width)
    prefix_text, suffix_text = prefixes.to_pylist(), suffixes.to_pylist()
    pairs = zip(wanted_p.tolist(), wanted_s.tolist(), strict=True)
    stored = _insert_templates(conn, [(prefix_text[p], suffix_text[x]) for p, x in pairs])
    # the distinct pairs come sorted by pair code: each row's id by a binary search
    keys = wanted_p.astype(np.int64) * width + wanted_s
    ids[has] = stored[np.searchsorted(keys, prefix_codes.astype(np.int64) * width + suffix_codes)]
    return ids


def _insert_templates(conn: Connection, pairs: list[tuple[str, str]]) -> np.ndarray:
    """Insert the (prefix, suffix) templates; their new ids, in order."""
    import numpy as np
    import pyarrow as pa

    new_ids = np.asarray(
        [
            r[0]
            for r in conn.execute(
                "SELECT nextval('prompt_templates_id_seq') FROM range(?)", [len(pairs)]
            ).fetchall()
        ],
        np.int64,
    )
    rows = pa.table(
        {
            "id": pa.array(new_ids, pa.int32()),
            "prefix": pa.array([prefix for prefix, _ in pairs], pa.string()),
            "suffix": pa.array([suffix for _, suffix in pairs], pa.string()),
        }
    )
    conn.register("new_templates", rows)
    try:
        conn.execute(
            "INSERT INTO prompt_templates (id, prefix, suffix) SELECT * FROM new_templates"
        )
    finally:
        conn.unregister("new_templates")
    return new_ids
