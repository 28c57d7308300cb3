"""The HTTP side of the typed boundary (app/contract/jobs.py): the job body the write API takes (an
evaluation, a run, or a recoverability analysis), the one error shape, and the status codes each
kind of route declares in the OpenAPI document.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Path
from pydantic import BaseModel, Discriminator, Field, Tag

from app.contract.jobs import EvaluateJobIn, Int, ModelIn, Name, SeriesJobIn, Strict
from app.services.recovery import CONTROLS, MAX_TABLE_DOCS

MAX_ID = 2**31 - 1  # ids are INTEGER columns
Id = Annotated[int, Path(ge=0, le=MAX_ID, description="an id (0 to 2^31 - 1)")]


class ErrorBody(BaseModel):
    """Every 4xx answer: one message saying what is wrong and how to fix it."""

    detail: str


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


# -------------------------------------------------------------------------- job requests


class CorpusIn(Strict):
    source: Annotated[str, Field(min_length=1, max_length=500)]
    text_field: Name = "text"
    separator: Annotated[str, Field(min_length=1, max_length=20)] | None = None
    max_docs: Annotated[Int, Field(ge=3, le=MAX_TABLE_DOCS)] | None = 2000
    config: Annotated[str, Field(max_length=200)] | None = None
    split: Name = "train"


class RecoveryOptionsIn(Strict):
    max_tokens: Annotated[Int, Field(ge=16, le=32768)] = 2047
    k: Annotated[Int, Field(ge=1, le=262144)] = 4096
    eval_fraction: Annotated[float, Field(ge=0.05, le=0.5)] = 0.2
    select_fraction: Annotated[float, Field(ge=0.05, le=0.5)] = 0.1
    seed: Annotated[Int, Field(ge=0, le=2**31 - 1)] = 0
    n_boot: Annotated[Int, Field(ge=100, le=20000)] = 2000
    controls: list[Literal[CONTROLS]] = list(CONTROLS)  # type: ignore[valid-type]


class RecoverJobIn(Strict):
    """A recoverability analysis of a pair on a text corpus (one shard)."""

    kind: Literal["recover"]
    base: ModelIn
    post: ModelIn
    corpus: CorpusIn
    options: RecoveryOptionsIn = RecoveryOptionsIn()
    label: Annotated[str, Field(max_length=500)] | None = None
    stage: Annotated[str, Field(max_length=50)] | None = None


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
