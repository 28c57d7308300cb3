"""What routes declare in the OpenAPI document besides their body: the status codes of each kind of
route (all in the one error shape, forgetmap.contract.errors.ErrorBody), and the table files that
the export routes answer (CSV or Parquet by the path's suffix)."""

from __future__ import annotations

import io
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from fastapi.responses import Response
from forgetmap.contract.errors import ErrorBody
from forgetmap.core.spreadsheet_cells import inert_table


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for these error codes, all with :class:`ErrorBody`."""
    text = {
        401: "no token, or an invalid or revoked one (or a private forgetmap without a token)",
        403: "the token's role may not do this; the message names the role needed",
        404: "an id or name that does not exist",
        413: "the upload is too large",
        400: "a body that is not JSON",
        422: "a parameter or body that is not valid; the message says which and why",
        503: "busy: retry after the seconds in Retry-After",
    }
    return {code: {"model": ErrorBody, "description": text[code]} for code in codes}


# 401 and 422 are added to every operation by forgetmap.web.openapi.install_openapi; routes declare
# the rest
ID_ERRORS = errors(404)
WRITE_ERRORS = errors(401, 403, 422)
WRITE_ID_ERRORS = errors(401, 403, 404, 422)
TABLE: dict[int | str, dict[str, Any]]
TABLE = {
    200: {
        "description": "the table as a file",
        "content": {
            "text/csv": {"schema": {"type": "string"}},
            "application/vnd.apache.parquet": {"schema": {"type": "string", "format": "binary"}},
        },
    }
}


def table_response(table: pa.Table, fmt: str, stem: str) -> Response:
    """``table`` as a download named ``stem.fmt``: CSV for "csv" (text cells a spreadsheet would
    run as a formula get a leading ``'``: forgetmap.core.spreadsheet_cells), else Parquet (as
    stored)."""
    buf = io.BytesIO()
    if fmt == "csv":
        pacsv.write_csv(inert_table(table), buf)
        media = "text/csv; charset=utf-8"
    else:
        pq.write_table(table, buf)
        media = "application/vnd.apache.parquet"
    return Response(
        buf.getvalue(),
        media_type=media,
        headers={"Content-Disposition": f'attachment; filename="{stem}.{fmt}"'},
    )
