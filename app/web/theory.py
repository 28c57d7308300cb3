"""The theory lab: the page ``/theory`` and its JSON ``/api/theory``, both from the same parameters
(deps.lab_params) and the same computation, cached per parameter set by the app's
``forgetmap.analysis.lab.TheoryLab``.

A parameter set not yet cached costs about a second of CPU (up to FORGETMAP_THEORY_SECONDS), and
the lab computes one at a time: the others wait, each on a thread of the app. So the requests that
compute (or wait to) are bounded: ``ANONYMOUS_LAB_REQUESTS`` at once for visitors without a login
or a token, ``IDENTIFIED_LAB_REQUESTS`` for those with one; beyond its bound a request is a 503
with Retry-After at once. Cached parameter sets (the page's defaults among them) are answered
whatever the load.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse
from forgetmap.analysis.lab import LabBusy, LabParams
from forgetmap.core.errors import InputError
from forgetmap.web import deps
from forgetmap.web.responses import errors
from forgetmap.web.session import current_principal
from forgetmap.web.templating import html_page

router = APIRouter()
Params = Annotated[LabParams, Depends(deps.lab_params)]

ANONYMOUS_LAB_REQUESTS = 2
"""Uncached theory-lab requests without a login or token computed (or waiting) at once."""
IDENTIFIED_LAB_REQUESTS = 4
"""The same for requests with a login or a valid token of any role, all together."""
RETRY_AFTER_SECONDS = 5

_anonymous_slots = threading.BoundedSemaphore(ANONYMOUS_LAB_REQUESTS)
_identified_slots = threading.BoundedSemaphore(IDENTIFIED_LAB_REQUESTS)


def _identified(request: Request) -> bool:
    """A login or a valid token (an invalid token counts as none: the lab is a public read)."""
    if current_principal(request) is not None:
        return True
    try:
        return deps.bearer_principal(request) is not None
    except HTTPException:
        return False


@contextmanager
def _lab_slot(request: Request) -> Iterator[None]:
    """One of the bounded places to compute in; 503 with Retry-After when all are taken."""
    identified = _identified(request)
    slots = _identified_slots if identified else _anonymous_slots
    if not slots.acquire(blocking=False):
        who = (
            f"{IDENTIFIED_LAB_REQUESTS} requests with a login or token"
            if identified
            else f"{ANONYMOUS_LAB_REQUESTS} requests without a login"
        )
        raise HTTPException(
            503,
            f"the theory lab is computing {who}, the most at once; retry in a few seconds"
            + ("" if identified else ", or log in"),
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    try:
        yield
    finally:
        slots.release()


def _lab(request: Request, params: LabParams) -> dict:
    """The lab's plots; 422 when the dynamics diverge or run past their time budget, 503 while
    the requests computing are at their bound or another computation holds the lab too long."""
    lab = request.app.state.theory_lab
    try:
        if lab.is_cached(params):
            return lab.data(params)
        with _lab_slot(request):
            return lab.data(params)
    except InputError as exc:
        raise HTTPException(422, str(exc)) from exc
    except LabBusy as exc:
        raise HTTPException(
            503, str(exc), headers={"Retry-After": str(RETRY_AFTER_SECONDS)}
        ) from exc


@router.get("/theory", response_class=HTMLResponse, include_in_schema=False)
def theory_page(request: Request, params: Params) -> HTMLResponse:
    return html_page(request, "theory.html", params=params, data=_lab(request, params))


@router.get("/api/theory", tags=["api"], responses=errors(503))
def api_theory(request: Request, params: Params) -> dict:
    """The theory lab's four plots (two-mode mixture: forward vs reverse KL, replay). Cached per
    parameter set; 422 when the dynamics diverge or the computation runs past its time budget
    (FORGETMAP_THEORY_SECONDS), 503 with Retry-After when more requests compute at once than
    their bound allows (2 without a login or token, 4 with one) or another computation holds the
    lab too long."""
    return _lab(request, params)
