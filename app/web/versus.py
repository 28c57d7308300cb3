"""Two pairs side by side, question by question (``/pairs/{a}/versus/{b}`` and its JSON): which
questions one recipe forgot while the other kept them, and which both forgot. Meant for two
recipes of one base; two bases are compared on the questions both paired, and the page says so."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from forgetmap.db import flips
from forgetmap.web import deps
from forgetmap.web.pairs import public
from forgetmap.web.responses import ID_ERRORS
from forgetmap.web.templating import cached_for_readers, html_page

router = APIRouter()


def _compared(request: Request, first_id: int, second_id: int) -> dict:
    first, second = deps.get_pair(request, first_id), deps.get_pair(request, second_id)
    with deps.store(request).read() as conn:
        found = flips.versus(conn, first, second)
    return {
        "first": public(first),
        "second": public(second),
        "same_base": first["base"] == second["base"],
        **found,
    }


@router.get(
    "/pairs/{first_id}/versus/{second_id}", response_class=HTMLResponse, include_in_schema=False
)
@cached_for_readers
def versus_page(request: Request, first_id: deps.Id, second_id: deps.Id) -> HTMLResponse:
    return html_page(
        request, "versus.html", shown=flips.VERSUS_SHOWN, **_compared(request, first_id, second_id)
    )


@router.get("/api/pairs/{first_id}/versus/{second_id}", tags=["api"], responses=ID_ERRORS)
def api_versus(request: Request, first_id: deps.Id, second_id: deps.Id) -> dict:
    """Two pairs question by question: per benchmark, ``first`` (questions the first pair forgot
    and the second kept), ``second`` (the reverse) and ``both`` (forgotten by both); and those
    questions (at most 500 a side). Forgot: 1->0 in a strict majority of the seeds a pair
    paired; kept: 1->1 in a strict majority."""
    return _compared(request, first_id, second_id)
