"""The theory lab: the page ``/theory`` and its JSON ``/api/theory``, both from the same parameters
(deps.lab_params) and the same computation, cached per parameter set by app.analysis.lab."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse

from app.analysis.lab import LabBusy, LabParams, lab_data
from app.core.errors import InputError
from app.web import deps
from app.web.responses import errors
from app.web.templating import html_page

router = APIRouter()
Params = Annotated[LabParams, Depends(deps.lab_params)]


def _lab(params: LabParams) -> dict:
    """The lab's plots; 422 when the dynamics diverge or run past their time budget, 503 while
    another computation holds the lab."""
    try:
        return lab_data(params)
    except InputError as exc:
        raise HTTPException(422, str(exc)) from exc
    except LabBusy as exc:
        raise HTTPException(503, str(exc), headers={"Retry-After": "5"}) from exc


@router.get("/theory", response_class=HTMLResponse, include_in_schema=False)
def theory_page(request: Request, params: Params) -> HTMLResponse:
    return html_page(request, "theory.html", params=params, data=_lab(params))


@router.get("/api/theory", tags=["api"], responses=errors(503))
def api_theory(params: Params) -> dict:
    """The theory lab's four plots (two-mode mixture: forward vs reverse KL, replay). Cached per
    parameter set; 422 when the dynamics diverge or the computation runs past its time budget
    (FORGETMAP_THEORY_SECONDS), 503 while another computation holds the lab."""
    return _lab(params)
