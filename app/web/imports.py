"""Imports through the app: ``POST /api/imports`` (role submit; the body is the file itself) and
the "Import results" page ``/import``, whose script sends the chosen file, or the chosen folder as
a tar it builds, the same way (a login with role submit and the page's CSRF token). Either way the
upload is streamed to disk, checked like the command line's options, and imported as a job
(app/services/imports.py): the answer is 202 with the job's id, and ``/jobs/{id}`` follows it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse
from forgetmap.contract.imports import KINDS, import_options
from forgetmap.core.errors import InputError
from forgetmap.services.imports import (
    ImportRunner,
    UploadTooLarge,
    check_options,
    staging_folder,
    too_large_message,
)
from forgetmap.services.tokens import Principal, Role
from forgetmap.web import deps
from forgetmap.web.responses import WRITE_ERRORS, errors
from forgetmap.web.session import check_csrf, csrf_token, require_login
from forgetmap.web.templating import html_page
from starlette.requests import ClientDisconnect

router = APIRouter()
WRITE_BUFFER = 1 << 20  # bytes gathered before a write to disk (off the event loop)
BINARY_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}


def install(app: FastAPI) -> None:
    """The app's import runner; uploads a stopped app left are removed, their jobs failed."""
    settings = app.state.settings
    runner = ImportRunner(
        app.state.store,
        staging_folder(app.state.store.path),
        max_bytes=settings.import_max_bytes,
        max_unpacked_bytes=settings.import_max_unpacked_bytes,
    )
    runner.settle_interrupted()
    app.state.imports = runner


def runner_of(request: Request) -> ImportRunner:
    return request.app.state.imports


class ImportQuery:
    """The upload's query: the file's name and the command line's options for its kind."""

    def __init__(
        self,
        kind: Annotated[
            Literal["table", "lm-eval", "lighteval", "inspect", "eee"],
            Query(description="the import's kind"),
        ],
        filename: Annotated[
            str,
            Query(
                min_length=1,
                max_length=255,
                description=(
                    "the file's own name: its suffix tells a table's format, an lm-eval samples "
                    "file's name its task; an archive (.zip, .tar, .tar.gz) is unpacked, except "
                    "an inspect .eval log"
                ),
            ),
        ],
        model: Annotated[str | None, Query(max_length=200, description="--model")] = None,
        metric: Annotated[
            str | None, Query(max_length=200, description="--metric (lm-eval, lighteval)")
        ] = None,
        filter: Annotated[
            list[str], Query(max_length=50, description="--filter, repeatable (lm-eval)")
        ] = [],  # noqa: A002, B006 - the CLI's name; FastAPI copies defaults
        seed: Annotated[int | None, Query(description="--seed (lm-eval, lighteval)")] = None,
        latest: Annotated[bool, Query(description="--latest (lighteval)")] = False,
        evaluation_result_id: Annotated[
            str | None, Query(max_length=200, description="--evaluation-result-id (eee)")
        ] = None,
        scorer: Annotated[
            str | None, Query(max_length=200, description="--scorer (inspect)")
        ] = None,
    ):
        self.filename = filename
        self.values: dict[str, Any]
        self.values = dict(
            kind=kind,
            model=model,
            metric=metric,
            filters=filter,
            seed=seed,
            latest=latest,
            evaluation_result_id=evaluation_result_id,
            scorer=scorer,
        )


async def receive(request: Request, query: ImportQuery, owner: str) -> dict:
    """Check the options, stream the body into the staging folder, and queue the import job."""
    runner = runner_of(request)
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > runner.max_bytes:
        raise HTTPException(413, too_large_message(int(declared), runner.max_bytes))
    try:
        options = import_options(**query.values)
        check_options(options)
        upload = runner.stage(query.filename)
    except InputError as exc:
        raise HTTPException(422, str(exc)) from exc
    try:
        pending = bytearray()
        async for chunk in request.stream():
            pending += chunk
            if len(pending) >= WRITE_BUFFER:
                await anyio.to_thread.run_sync(upload.write, bytes(pending))
                pending.clear()
        await anyio.to_thread.run_sync(upload.write, bytes(pending))
        upload.close()
    except UploadTooLarge as exc:
        upload.discard()
        raise HTTPException(413, str(exc)) from exc
    except InputError as exc:
        upload.discard()
        raise HTTPException(422, str(exc)) from exc
    except ClientDisconnect as exc:  # nobody hears the answer; nothing is kept
        upload.discard()
        raise HTTPException(400, "the upload was cut off before its end") from exc
    except BaseException:  # the app stops
        upload.discard()
        raise
    job_id = await anyio.to_thread.run_sync(runner.submit, upload, options, owner)
    return {"id": job_id, "bytes": upload.size, "url": f"/jobs/{job_id}"}


@router.post(
    "/api/imports",
    tags=["write"],
    status_code=202,
    responses={**WRITE_ERRORS, **errors(413)},
    openapi_extra=BINARY_BODY,
)
async def upload_import(
    request: Request,
    query: Annotated[ImportQuery, Depends()],
    principal: deps.Submitter,
) -> dict:
    """Import a file sent as the body (role submit): a table (.csv, .jsonl, .parquet), an
    lm-eval samples file, or a details folder or output tree as a .zip, .tar or .tar.gz; the
    options are `forgetmap import`'s. Answers 202 with the job's id at once; the import runs in
    the app as one transaction (``GET /api/jobs/{id}``: progress, then the summary or the
    one-line error). Over FORGETMAP_IMPORT_MAX_BYTES: 413."""
    return await receive(request, query, principal.name)


@router.get("/import", response_class=HTMLResponse, include_in_schema=False)
def import_page(request: Request) -> HTMLResponse:
    require_login(request, Role.submit)
    return html_page(
        request,
        "import.html",
        csrf=csrf_token(request),
        kinds=KINDS,
        max_bytes=runner_of(request).max_bytes,
    )


@router.post("/import", include_in_schema=False, status_code=202)
async def import_from_page(
    request: Request, query: Annotated[ImportQuery, Depends()]
) -> JSONResponse:
    """The page's upload: the same as the API's, for a login with role submit; the CSRF token
    comes in a header (the body is the file)."""
    principal: Principal = await anyio.to_thread.run_sync(require_login, request, Role.submit)
    check_csrf(request, request.headers.get("x-csrf-token"))
    return JSONResponse(await receive(request, query, principal.name), status_code=202)
