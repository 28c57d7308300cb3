"""Pairs made in the browser (a login with role submit). ``/pairs/suggest`` lists the base -> post
pairs that cached model cards or the names support (forgetmap.services.pair_suggest), each with its
evidence and stage and a checkbox, and adds the chosen ones as `forgetmap pair suggest --accept`
does, through the same function; its JSON twin is ``GET /api/pairs/suggestions``. ``/pairs/new``
pairs any two stored models, as `forgetmap pair add` and ``POST /api/pairs`` do (the same body,
forgetmap.contract.jobs.PairSpecIn, and the same function).

The cards are read from the app's own Hugging Face cache (its ``HF_HUB_CACHE``), never fetched.
This router is included before forgetmap.web.pairs, whose ``/pairs/{id}`` would take the word for an
id.
"""

from __future__ import annotations

import json
from typing import Annotated

import anyio
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from forgetmap.contract.base import validated
from forgetmap.contract.jobs import PairSpecIn
from forgetmap.core.errors import InputError
from forgetmap.core.stages import Stage
from forgetmap.db import queries
from forgetmap.db.pairing import add_pair
from forgetmap.services.pair_suggest import accept, named, stored_suggestions, suggestion_record
from forgetmap.services.tokens import Role
from forgetmap.web import deps
from forgetmap.web.session import check_csrf, csrf_token, require_login
from forgetmap.web.templating import html_page

router = APIRouter()
Added = Annotated[
    str | None, Query(max_length=1000, pattern=r"^\d+(,\d+)*$", description="pair ids just added")
]


@router.get("/api/pairs/suggestions", tags=["api"])
def api_suggestions(request: Request) -> list[dict]:
    """Base -> post pairs among the stored models that the post model's card (``base_model``, in
    the app's local Hugging Face cache) or the names (X -> X-Instruct, -Chat, -it, -SFT, -DPO, ...)
    support, not yet pairs: each with its evidence (``model card``, ``name``), the stage its
    name's tag says, the label it gets when added, and the number `pair suggest --accept` takes."""
    suggestions = stored_suggestions(deps.store(request))
    return [suggestion_record(s, number) for number, s in enumerate(suggestions, 1)]


def _page(request: Request, *, added: list[int], error: str | None = None) -> HTMLResponse:
    pairs = {p["id"]: p for p in deps.map_cache(request).pairs()}
    return html_page(
        request,
        "pair_suggest.html",
        suggestions=stored_suggestions(deps.store(request)),
        added=[pairs[i] for i in added if i in pairs],
        error=error,
        csrf=csrf_token(request),
    )


@router.get("/pairs/suggest", response_class=HTMLResponse, include_in_schema=False)
def suggest_page(request: Request, added: Added = None) -> HTMLResponse:
    require_login(request, Role.submit)
    return _page(request, added=[int(i) for i in added.split(",")] if added else [])


def _chosen_names(values: list) -> list[tuple[str, str]]:
    """The (base, post) of each ticked box (its value is the JSON ``[base, post]``)."""
    chosen = []
    for value in values:
        try:
            base, post = json.loads(str(value))
        except (ValueError, TypeError):  # not JSON, or not two names
            raise InputError(
                "a chosen pair is not one of the suggestions: reload the page"
            ) from None
        chosen.append((str(base), str(post)))
    return chosen


@router.post("/pairs/suggest", include_in_schema=False)
async def accept_from_page(request: Request) -> Response:
    """Add the ticked suggestions (one transaction), then show the page again with the pairs
    added."""
    require_login(request, Role.submit)
    form = await request.form()
    check_csrf(request, form.get("csrf"))
    store = deps.store(request)

    def add() -> list[int]:
        wanted = _chosen_names(form.getlist("pair"))
        if not wanted:
            raise InputError("tick at least one suggestion to add")
        return [pair_id for pair_id, _ in accept(store, named(stored_suggestions(store), wanted))]

    try:
        added = await anyio.to_thread.run_sync(add)
    except InputError as exc:
        return _page(request, added=[], error=str(exc))
    return RedirectResponse(f"/pairs/suggest?added={','.join(map(str, added))}", status_code=303)


def _new_pair_page(request: Request, values: dict, error: str | None = None) -> HTMLResponse:
    with deps.store(request).read() as conn:
        models = [m["name"] for m in queries.models(conn)]
    return html_page(
        request,
        "pair_new.html",
        models=models,
        values=values,
        error=error,
        stages=tuple(Stage),
        csrf=csrf_token(request),
    )


PairField = Annotated[str | None, Query(max_length=500)]


@router.get("/pairs/new", response_class=HTMLResponse, include_in_schema=False)
def new_pair_page(request: Request, base: PairField = None, post: PairField = None) -> HTMLResponse:
    """Pair two stored models: ``base`` and ``post`` preselect them (the import page's next
    step)."""
    require_login(request, Role.submit)
    return _new_pair_page(request, {"base": base or "", "post": post or ""})


@router.post("/pairs/new", include_in_schema=False)
async def add_pair_from_page(request: Request) -> Response:
    """Add the pair (one transaction), then open its page; a problem shows the form again with
    what was chosen and the one line that says what is wrong."""
    require_login(request, Role.submit)
    form = await request.form()
    check_csrf(request, form.get("csrf"))
    values = {k: str(form.get(k) or "").strip() for k in ("base", "post", "label", "stage")}
    store = deps.store(request)

    def add() -> int:
        body = validated(PairSpecIn, {k: v or None for k, v in values.items()})
        with store.transaction() as conn:
            pair_id, _, _ = add_pair(conn, body.base, body.post, label=body.label, stage=body.stage)
        return pair_id

    try:
        pair_id = await anyio.to_thread.run_sync(add)
    except InputError as exc:
        return _new_pair_page(request, values, str(exc))
    return RedirectResponse(f"/pairs/{pair_id}", status_code=303)
