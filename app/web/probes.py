"""Probes of a pair (issue 53): its stored probes with their reports
(``/api/pairs/{id}/probes``) and one probe's outcomes (``/api/probes/{id}/outcomes``). A probe is
submitted as a job (``POST /api/jobs`` with ``"kind": "probe"``, or ``forgetmap probe``)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, Request
from forgetmap.db import probe as probe_db
from forgetmap.web import deps
from forgetmap.web.responses import ID_ERRORS

router = APIRouter()


@router.get("/api/pairs/{pair_id}/probes", tags=["api"], responses=ID_ERRORS)
def api_pair_probes(request: Request, pair_id: deps.Id) -> list[dict]:
    """The pair's probes, newest first: the models and options each ran with, and its report:
    per arm (the flips, and the shuffled, kept and base controls) the items probed, recovered,
    the rate and the chance rate; the flips' recovery beyond the shuffled control with its 95%
    interval; the flips per benchmark; what was left out and why."""
    deps.get_pair(request, pair_id)
    with deps.store(request).read() as conn:
        return probe_db.pair_probes(conn, pair_id)


@router.get("/api/probes/{probe_id}/outcomes", tags=["api"], responses=ID_ERRORS)
def api_probe_outcomes(
    request: Request,
    probe_id: deps.Id,
    arm: Annotated[Literal["flips", "shuffled", "kept", "base"] | None, Query()] = None,
) -> list[dict]:
    """Every outcome of a probe (of one arm): the row it asked about, its option count, the gold
    option and the one the model ranked first (null: a tie at the top)."""
    with deps.store(request).read() as conn:
        if not probe_db.probe_exists(conn, probe_id):
            raise HTTPException(404, f"probe {probe_id} does not exist")
        return probe_db.probe_outcomes(conn, probe_id, arm)
