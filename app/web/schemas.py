"""The HTTP side of the typed boundary (app/contract/): the job body the write API takes (an
evaluation, a run, or a recoverability analysis), the path id, and the status codes each kind of
route declares in the OpenAPI document (all in the one error shape, app.contract.errors.ErrorBody).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path
from pydantic import Discriminator, Tag

from app.contract.base import MAX_ID
from app.contract.errors import ErrorBody
from app.contract.jobs import EvaluateJobIn, SeriesJobIn
from app.contract.recovery import RecoverJobIn

Id = Annotated[int, Path(ge=0, le=MAX_ID, description="an id (0 to 2^31 - 1)")]


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


# 401 and 422 are added to every operation by app.web.openapi.install_openapi; routes declare the rest
ID_ERRORS = errors(404)
WRITE_ERRORS = errors(401, 403, 422)
WRITE_ID_ERRORS = errors(401, 403, 404, 422)


def _job_kind(value: Any) -> str:
    kind = (
        value.get("kind", "evaluate") if isinstance(value, dict) else getattr(value, "kind", None)
    )
    return kind if kind in ("evaluate", "recover", "series") else "evaluate"


JobIn = Annotated[
    Annotated[EvaluateJobIn, Tag("evaluate")]
    | Annotated[RecoverJobIn, Tag("recover")]
    | Annotated[SeriesJobIn, Tag("series")],
    Discriminator(_job_kind),
]
