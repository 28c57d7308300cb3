"""Suggested pairs: the page ``/pairs/suggest`` (a login with role submit) lists the base -> post
pairs that cached model cards or the names support (forgetmap.services.pair_suggest), each with its
evidence and stage and a checkbox, and adds the chosen ones as `forgetmap pair suggest --accept`
does, through the same function; its JSON twin is ``GET /api/pairs/suggestions``.

The cards are read from the app's own Hugging Face cache (its ``HF_HUB_CACHE``), never fetched.
This router is included before forgetmap.web.pairs, whose ``/pairs/{id}`` would take the word for an id.
"""

from __future__ import annotations

import json
from typing import Annotated

import anyio
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from forgetmap.core.errors import InputError
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
        request, "pair_suggest.html", suggestions=stored_suggestions(deps.store(request)),
        added=[pairs[i] for i in added if i in pairs], error=error, csrf=csrf_token(request),
    )  # fmt: skip


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
