"""A normalized table's whole prompts, put back together in Arrow, for reader tests: the product
rebuilds them in SQL only (forgetmap.db.prompts.full_prompt); tests/unit/test_prompt_templates.py
checks that the two agree."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc


def whole_prompts(table: pa.Table) -> pa.ChunkedArray:
    """Each row's whole prompt, as the source gave it: the template put back around the own part
    where the reader settled one (``prompt_prefix``), else ``prompt`` itself."""
    prefix, suffix = (
        table["prompt_prefix"].cast(pa.string()),
        table["prompt_suffix"].cast(pa.string()),
    )
    own = pc.coalesce(table["prompt"], table["question"])
    rebuilt = pc.binary_join_element_wise(prefix, own, suffix, "")
    return pc.if_else(pc.is_null(prefix), table["prompt"], rebuilt)
