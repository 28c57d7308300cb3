"""Series routes: ``GET /api/series``, ``GET /api/series/{id}``, its question histories, its
export to a tracker (``GET /api/series/{id}/export``), and the page ``/series/{id}``. Views are
thin: numbers come from forgetmap.services.series, rows from forgetmap.db.series."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse
from forgetmap.analysis.merge_choice import Objective
from forgetmap.contract.jobs import CheckpointSubmission
from forgetmap.contract.series import MAX_FLIPS, SeriesExport
from forgetmap.core.errors import InputError
from forgetmap.core.vocabularies import Aggregate
from forgetmap.db import jobs as jobs_db
from forgetmap.db import series as series_db
from forgetmap.db.series import axis_label
from forgetmap.services.merge import sweep_choice
from forgetmap.services.queue import send_and_record
from forgetmap.services.series import series_view, submit_checkpoint
from forgetmap.services.series_export import series_export
from forgetmap.web import deps
from forgetmap.web.forms import model_rules
from forgetmap.web.responses import ID_ERRORS, WRITE_ERRORS
from forgetmap.web.templating import cached_for_readers, templates

router = APIRouter(tags=["series"])
# the question-history filter, as the API and the page take it
Fate = Annotated[str | None, Query(description="forgotten, relearned, learned, kept, never")]
# what an export takes: its steps (the parameter repeated; all by default), flip rows per step
Steps = Annotated[list[int] | None, Query(description="a step to export (repeat it); default all")]
MaxFlips = Annotated[int, Query(ge=0, le=100_000, description="flip rows per step")]
FATE_LABELS = {
    "forgotten": "forgotten, never recovered",
    "relearned": "forgotten, then relearned",
    "learned": "learned",
    "kept": "kept",
    "never": "never known",
}
SWEEP_FATE_LABELS = {
    "forgotten": "forgotten by the post model",
    "relearned": "newly forgotten by a merge",
    "learned": "learned",
    "kept": "kept",
    "never": "never known",
}
"""A sweep's questions (axis ``mix``, from the base at mix 0 to the post model at 1): a question
the post model forgot is undone at the largest mix that still knows it; one both ends know but a
merge between lost is newly forgotten by it (forgetmap.analysis.merge_fates)."""


def get_series(request: Request, series_id: int) -> dict:
    def load():
        with deps.store(request).read() as conn:
            return series_db.get_series(conn, series_id=series_id)

    found = deps.map_cache(request).cache.get(("series-info", series_id), load)
    if found is None:
        raise HTTPException(
            404, f"series {series_id} does not exist; /series (GET /api/series) lists them"
        )
    return found


def histories(
    request: Request, series: dict, benchmark, category, fate, page, page_size, sample_id=None
):
    fate = fate or None  # the page's form sends an empty value for "all"
    if fate is not None and fate not in series_db.FATES:
        raise HTTPException(422, f"fate must be one of {', '.join(series_db.FATES)}, got {fate!r}")
    ids = deps.benchmark_filter(request, benchmark or None, category or None)

    def load():
        with deps.store(request).read() as conn:
            return series_db.question_histories(
                conn,
                series,
                benchmarks=ids,
                fate=fate,
                page=page,
                page_size=page_size,
                sample_id=sample_id,
            )

    key = ("histories", series["id"], tuple(ids or ()), fate, page, page_size, sample_id)
    return deps.map_cache(request).cache.get(key, load)


@router.get("/api/series")
def api_series_list(
    request: Request,
    name: Annotated[str | None, Query(description="only the series of this name")] = None,
) -> list[dict]:
    """Every series: id, name, base and its checkpoints' steps in order (``name``: the one series
    of that name, or none)."""

    def load():
        with deps.store(request).read() as conn:
            return series_db.list_series(conn)

    listed = deps.map_cache(request).cache.get(("series-list",), load)
    return listed if name is None else [s for s in listed if s["name"] == name]


@router.get("/api/series/{series_id}", responses=ID_ERRORS)
def api_series(request: Request, series_id: deps.Id, aggregate: Aggregate = "macro") -> dict:
    """A series with one record per (checkpoint, category) and Total (the records of
    `forgetmap series show NAME --format json`) and, per category, the first step whose F_true
    clears its noise floor beyond its 95% CI across seeds."""
    return series_view(deps.map_cache(request), get_series(request, series_id), aggregate)


KeepGains = Annotated[
    float,
    Query(ge=0, le=1, description="the least share of the post model's BT_true a mix must keep"),
]


def merge_choice(
    request: Request, series: dict, objective: Objective, keep_gains: float, category: str
) -> dict:
    """A sweep's choice (forgetmap.services.merge.sweep_choice); 422 for a training run."""
    if series["axis"] != "mix":
        raise HTTPException(
            422, f"series {series['name']!r} is a training run, not a merge sweep: no mix to choose"
        )
    view = series_view(deps.map_cache(request), series)
    try:
        return sweep_choice(
            view["records"], category=category, objective=objective, keep_gains=keep_gains
        )
    except InputError as exc:
        raise HTTPException(422, str(exc)) from exc


@router.get("/api/series/{series_id}/merge-choice", responses=ID_ERRORS)
def api_merge_choice(
    request: Request,
    series_id: deps.Id,
    objective: Objective = "forget_least",
    keep_gains: KeepGains = 0.8,
    category: Annotated[str, Query(max_length=200)] = "Total",
) -> dict:
    """A merge sweep's answer to "which mix forgets least while keeping at least ``keep_gains``
    of the post model's gains" (``objective=forget_least``) or "which mix has the best BT_true -
    F_true" (``net``), in ``category``: the mix, whether it beats the post model beyond noise
    (its F_true 95% interval wholly below the post model's), a sentence saying so, and every
    mix's scores with its interval (what `forgetmap merge best` prints)."""
    series = get_series(request, series_id)
    return merge_choice(request, series, objective, keep_gains, category)


@router.get("/api/series/{series_id}/export", responses=ID_ERRORS)
def api_series_export(
    request: Request,
    series_id: deps.Id,
    aggregate: Aggregate = "macro",
    steps: Steps = None,
    max_flips: MaxFlips = MAX_FLIPS,
) -> SeriesExport:
    """A series' results as a tracker takes them (what `forgetmap series export` writes): per
    (step, category) and Total F_true and BT_true with their 95% margins, the noise floor and
    exact flip counts, plus the flipped samples (at most ``max_flips`` per step)."""
    series = get_series(request, series_id)
    chosen = None if steps is None else tuple(sorted(set(steps)))

    def build() -> SeriesExport:
        return series_export(
            deps.map_cache(request), series, aggregate=aggregate, steps=chosen, max_flips=max_flips
        )

    try:
        return deps.map_cache(request).cache.get(
            ("series-export", series_id, aggregate, chosen, max_flips), build
        )
    except InputError as exc:
        raise HTTPException(422, str(exc)) from exc


@router.get("/api/series/{series_id}/questions", responses=ID_ERRORS)
def api_series_questions(
    request: Request,
    series_id: deps.Id,
    fate: Fate = None,
    benchmark: str | None = None,
    category: str | None = None,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=500)] = deps.PAGE_SIZE,
) -> dict:
    """Each question's correctness at the base and at every checkpoint (all seeds), the step where
    it was first forgotten and its fate; ``fate`` filters (forgotten = never recovered)."""
    series = get_series(request, series_id)
    total, counts, rows = histories(request, series, benchmark, category, fate, page, page_size)
    return {
        "series": series["name"],
        "fate": fate,
        "counts": counts,
        "total": total,
        "page": page,
        "page_size": page_size,
        "questions": rows,
    }


ALL_CATEGORIES = "all"
"""The series page's ``category`` that asks for every category (no category opens on the first)."""


@router.get("/series", response_class=HTMLResponse, include_in_schema=False)
@cached_for_readers
def series_index(request: Request) -> HTMLResponse:
    """Every series (a training run's checkpoints against its base), each linked to its page."""
    return templates.TemplateResponse(
        request, "series_index.html", {"series": api_series_list(request)}
    )


@router.get("/series/{series_id}", response_class=HTMLResponse, include_in_schema=False)
@cached_for_readers
def series_page(
    request: Request,
    series_id: int,
    fate: Fate = None,
    benchmark: str | None = None,
    category: str | None = None,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    sample_id: Annotated[str | None, Query(max_length=500)] = None,
    objective: Objective = "forget_least",
    keep_gains: KeepGains = 0.8,
) -> HTMLResponse:
    series = get_series(request, series_id)
    view = series_view(deps.map_cache(request), series)
    sweep = series["axis"] == "mix"
    choice = None
    if sweep and any(r["step"] == 1000 for r in view["records"]):
        choice = merge_choice(request, series, objective, keep_gains, "Total")
    opened_on = None
    if category in (ALL_CATEGORIES, ""):
        category = None
    elif (
        category is None and benchmark is None and sample_id is None and len(view["categories"]) > 2
    ):
        # a long run has millions of (question, checkpoint, seed) answers: the drill-down opens
        # on one category, and says so ("all categories" is one click away)
        category = opened_on = view["categories"][0]
    # one question (``sample_id`` with its ``benchmark``): a drill-down's link to its history
    one = sample_id if benchmark else None
    total, counts, rows = histories(
        request, series, benchmark, category, fate, page, deps.PAGE_SIZE, one
    )
    pair_of_step = {c["step"]: c["pair_id"] for c in series["checkpoints"]}
    return templates.TemplateResponse(
        request,
        "series.html",
        dict(
            view=view,
            series=series,
            questions=rows,
            total=total,
            counts=counts,
            fate=fate,
            fate_labels=SWEEP_FATE_LABELS if sweep else FATE_LABELS,
            sweep=sweep,
            choice=choice,
            objective=objective,
            keep_gains=keep_gains,
            place={
                c["step"]: f"step {c['step']}"
                if series["axis"] == "step"
                else axis_label(series["axis"], c["step"])
                for c in series["checkpoints"]
            },
            benchmark=benchmark or "",
            category=category or "",
            page=page,
            pages=max((total + deps.PAGE_SIZE - 1) // deps.PAGE_SIZE, 1),
            pair_of_step=pair_of_step,
            opened_on=opened_on,
            all_categories=ALL_CATEGORIES,
            one_question=one,
        ),
    )


@router.post("/api/checkpoints", status_code=200, responses=WRITE_ERRORS)
def api_submit_checkpoint(
    request: Request, body: CheckpointSubmission, principal: deps.Submitter
) -> dict:
    """Evaluate one checkpoint folder of a run and place it in its series by step (what
    `forgetmap watch` sends). Idempotent per (series, folder): a folder already submitted answers
    ``already`` (or, when its evaluation failed, is retried up to 3 times: ``retried``,
    ``gave_up``)."""
    try:
        with deps.store(request).transaction() as conn:
            result, to_send = submit_checkpoint(conn, body, model_rules(request))
            if result["status"] == "submitted":  # a new job: its owner is the caller
                jobs_db.set_owner(conn, result["job_id"], principal.name)
    except InputError as exc:
        raise HTTPException(422, str(exc)) from exc
    sent, problem = send_and_record(deps.store(request), request.app.state.enqueuer, to_send)
    return {**result, "shards_to_run": len(to_send), "sent": sent, "queue_error": problem}
