"""Request-scoped access to the app's store, and the dependencies that parse a route's parameters.

A page and its JSON twin take their query through the same dependency here (the map's filters, a
drill-down, a sample, the theory lab's parameters), so they accept the same values and answer the
same 422 texts. Ids come as path parameters (``Id``) and are looked up in the view (get_pair,
get_job): a request that is not valid is a 422 before anything is looked up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, HTTPException, Path, Query, Request
from forgetmap.analysis.lab import LabParams
from forgetmap.contract.imports import IMPORT_JOB_KIND
from forgetmap.contract.limits import MAX_ID
from forgetmap.contract.shards import WORKER_HEADER
from forgetmap.core.answer_status import TRUNCATED, cause_mask, parse_exclude
from forgetmap.core.errors import InputError
from forgetmap.core.metrics import TOTAL
from forgetmap.core.vocabularies import Aggregate, Level
from forgetmap.db import Store, flips, queries
from forgetmap.db import merge as merge_db
from forgetmap.db import probe as probe_db
from forgetmap.db import recoverability as recoveries
from forgetmap.db import scores as scores_db
from forgetmap.services.extractor_shift import score_set_id
from forgetmap.services.job_view import job_detail
from forgetmap.services.map import MapQuery
from forgetmap.services.map_cache import MapCache
from forgetmap.services.pair_report import mark_reliable, pair_benchmarks
from forgetmap.services.recovery import headline
from forgetmap.services.rejections import RejectionLog
from forgetmap.services.tokens import (
    Principal,
    Role,
    local_principal,
    needs_role_message,
    token_principal,
)

Transition = Literal["10", "01", "11", "00"]
Truncated = Annotated[
    Literal["include", "exclude"],
    Query(
        description="exclude: leave out the samples whose answer was cut off (as exclude=truncated)"
    ),
]
EXCLUDE_PATTERN = r"^((no_answer|truncated|refused)(,(no_answer|truncated|refused))*)?$"
"""What ``exclude=`` takes: causes (``forgetmap.core.answer_status.CAUSES``), comma-separated."""
Exclude = Annotated[
    str | None,
    Query(
        max_length=100,
        pattern=EXCLUDE_PATTERN,
        description="causes whose samples are left out of every count, intervals and noise "
        "floors included: no_answer, truncated, refused (comma-separated)",
    ),
]
CAUSE_LABELS = {"no_answer": "no answer", "truncated": "cut off", "refused": "refused"}
CAUSE_TITLES = {
    "no_answer": "the text finished but no option or value could be extracted: not knowledge lost",
    "truncated": "the token limit came first: the answer was cut off before it was complete",
    "refused": "the model declined to answer",
}
EXCLUDE_CHOICES = (
    ("", "nothing"),
    ("no_answer", "no answer"),
    ("truncated", "cut off"),
    ("no_answer,truncated", "no answer, cut off"),
    ("no_answer,refused,truncated", "every answer never given"),
)
"""The drill-down's "leave out" choices (``exclude=``, names sorted as the page echoes them)."""
TRANSITION_LABELS = {"10": "1→0 forgotten", "01": "0→1 gained", "11": "1→1 kept", "00": "0→0 never"}
PAGE_SIZE = 50
Id = Annotated[int, Path(ge=0, le=MAX_ID, description="an id (0 to 2^31 - 1)")]


def store(request: Request) -> Store:
    return request.app.state.store


def map_cache(request: Request) -> MapCache:
    return request.app.state.map_cache


_LOOKED_UP = "forgetmap.bearer"  # scope key: the request's token once found (limits.py looks first)


def bearer_principal(request: Request) -> Principal | None:
    """The holder of the request's ``Authorization: Bearer`` token (an API token, or the app's
    local credential); None without a header, 401 for a token that is not (or no longer) valid.
    Looked up once per request: forgetmap.web.limits checks it before the body, the route again."""
    header = request.headers.get("Authorization", "")
    found = request.scope.get(_LOOKED_UP)
    if found is not None and found[0] == header:
        return found[1]
    scheme, _, token = header.partition(" ")
    if not token.strip() or scheme.lower() != "bearer":
        return None
    principal = local_principal(getattr(request.app.state, "local_credential", None), token.strip())
    if principal is None:
        with store(request).read() as conn:
            principal = token_principal(conn, token.strip())
    if principal is None:
        raise HTTPException(401, "invalid or revoked token", headers={"WWW-Authenticate": "Bearer"})
    request.scope[_LOOKED_UP] = (header, principal)
    return principal


def require_role(*roles: Role):
    """A dependency: the request's token, which must hold one of ``roles`` (admin holds all).
    401 without a valid token, 403 naming the role needed."""

    def dependency(request: Request) -> Principal:
        principal = bearer_principal(request)
        if principal is None:
            raise HTTPException(
                401,
                "this endpoint needs a token: send 'Authorization: Bearer <token>' (create one "
                f"with `forgetmap token create NAME --role {roles[0].value}`)",
                headers={"WWW-Authenticate": "Bearer"},
            )
        if not principal.may(*roles):
            raise HTTPException(403, needs_role_message(principal, *roles))
        return principal

    return dependency


_worker_role = require_role(Role.worker)


def worker_rejections(request: Request) -> RejectionLog:
    """The app's memory of refused workers (forgetmap.services.rejections), made with the app
    (forgetmap.web.create_app: its start is when "no worker since it started" counts from)."""
    return request.app.state.worker_rejections


def worker_name(request: Request, principal: Principal | None) -> str | None:
    """The name a worker gives itself (``X-Forgetmap-Worker``), taken only from a request with a
    worker's (or an admin's) token: from anyone else it is text that anyone could put on the job
    pages, so it is ignored."""
    if principal is None or not principal.may(Role.worker):
        return None
    return request.headers.get(WORKER_HEADER)


def worker_principal(request: Request) -> Principal:
    """``require_role(Role.worker)``, remembering who was refused and why, so a job page can say
    why its shards do not move. A refused call is named by its token when it has a valid one (a
    403: the token's name, which an admin chose), else not at all (a 401): never by its header."""
    try:
        principal = _worker_role(request)
    except HTTPException as exc:
        holder = _token_name(request) if exc.status_code == 403 else None
        worker_rejections(request).refused(holder and f"token {holder!r}", str(exc.detail))
        raise
    worker_rejections(request).accepted()
    return principal


def _token_name(request: Request) -> str | None:
    try:
        principal = bearer_principal(request)
    except HTTPException:
        return None
    return principal.name if principal is not None else None


Submitter = Annotated[Principal, Depends(require_role(Role.submit))]
Worker = Annotated[Principal, Depends(worker_principal)]


def get_pair(request: Request, pair_id: int) -> dict:
    with store(request).read() as conn:
        pair = queries.pair_info(conn, pair_id)
    if pair is None:
        raise HTTPException(404, f"pair {pair_id} does not exist; GET /api/pairs lists the pairs")
    return pair


def pair_probes(request: Request, pair_id: int) -> list[dict]:
    """A pair's probes, newest first (forgetmap.db.probe)."""
    with store(request).read() as conn:
        return probe_db.pair_probes(conn, pair_id)


def pair_sweeps(request: Request, pair: dict) -> list[dict]:
    """A pair's merge sweeps (forgetmap.db.merge)."""
    with store(request).read() as conn:
        return merge_db.pair_sweeps(conn, pair["base"], pair["post"])


def get_job(request: Request, job_id: int) -> dict:
    """A job with every shard's state, progress and error."""
    with store(request).read() as conn:
        job = job_detail(conn, job_id)
    if job is None:
        raise HTTPException(404, f"job {job_id} does not exist; GET /api/jobs lists the jobs")
    if job["kind"] == IMPORT_JOB_KIND:  # a running import's progress is kept in the app
        job["progress"] = request.app.state.imports.progress(job_id)
    return job


MAX_SIZE_B = 1_000_000  # billions of parameters: a size filter past this bounds nothing real
SizeB = Annotated[
    str | None,
    Query(
        max_length=30,
        description="base model parameters, in billions (the forms' unit); empty: no bound",
    ),
]


@dataclass(frozen=True)
class SizeRange:
    """The base models' size bounds of a filter, in parameters (None: no bound)."""

    min_size: int | None
    max_size: int | None


def _billions(value: str | None, name: str) -> int | None:
    """A size in billions of parameters as the forms send it (empty: not given) as parameters.
    Taken as text, not as a number, because a form without JavaScript sends every field, the
    empty ones as ``name=``."""
    if value is None or not value.strip():
        return None
    try:
        billions = float(value)
    except ValueError:
        raise HTTPException(422, f"{name} must be a number of billions, got {value!r}") from None
    if not 0 <= billions <= MAX_SIZE_B:
        raise HTTPException(
            422, f"{name} must be between 0 and {MAX_SIZE_B:,} (billions), got {value!r}"
        )
    return int(billions * 1e9)


def size_range(min_size_b: SizeB = None, max_size_b: SizeB = None) -> SizeRange:
    """``min_size_b`` and ``max_size_b``, the same for the map (``/``, ``/api/map``) and the atlas
    (``/atlas``, ``/api/atlas``): an empty value is no bound on every one of them."""
    return SizeRange(_billions(min_size_b, "min_size_b"), _billions(max_size_b, "max_size_b"))


def map_query(
    request: Request,
    sizes: Annotated[SizeRange, Depends(size_range)],
    level: Annotated[Level, Query(description="map columns")] = "category",
    aggregate: Annotated[Aggregate, Query()] = "macro",
    stage: Annotated[
        str | None, Query(max_length=50, description="keep pairs with this stage")
    ] = None,
    family: Annotated[
        str | None, Query(description="keep pairs whose base is of this family")
    ] = None,
    q: Annotated[
        str | None, Query(max_length=200, description="text in the pair's label or model names")
    ] = None,
    min_size: Annotated[
        float | None, Query(ge=0, le=1e15, description="base model parameters, at least")
    ] = None,
    max_size: Annotated[
        float | None, Query(ge=0, le=1e15, description="base model parameters, at most")
    ] = None,
    truncated: Truncated = "include",
    exclude: Exclude = None,
    scores: Annotated[
        str | None,
        Query(
            max_length=200,
            description="a score set's grades (forgetmap rescore) instead of "
            "the harness's; each record then carries f_true_shift and depends_on_extractor",
        ),
    ] = None,
) -> MapQuery:
    # the form's billions win over the API's parameters when both are given
    if sizes.min_size is not None:
        min_size = sizes.min_size
    if sizes.max_size is not None:
        max_size = sizes.max_size
    return MapQuery(
        level=level,
        aggregate=aggregate,
        stage=stage or None,
        family=family or None,
        q=q or None,
        min_size=min_size,
        max_size=max_size,
        truncated=truncated,
        exclude=excluded(exclude),
        scores=known_score_set(request, scores or None),
    )


def score_set_names(request: Request) -> list[str]:
    """The names of the stored score sets (``forgetmap rescore``), for the map's choice."""
    with store(request).read() as conn:
        return [row[0] for row in scores_db.score_sets(conn)]


def known_score_set(request: Request, name: str | None) -> str | None:
    """``name`` when a score set of that name exists; 404 with the way to list them otherwise."""
    if name is not None:
        try:
            score_set_id(store(request), name)
        except InputError as e:
            raise HTTPException(404, str(e)) from None
    return name


@dataclass(frozen=True)
class SamplesQuery:
    """A drill-down's query, the same for the samples page and ``GET /api/pairs/{id}/samples``:
    empty texts read as not given, and the "Total" column as every category."""

    benchmark: str | None
    category: str | None
    transition: Transition
    q: str | None
    page: int
    page_size: int
    exclude: frozenset[str]  # the causes whose seeds are left out (truncated=exclude included)
    cause: str | None  # only the seeds with this cause


def excluded(text: str | None, truncated: str = "include") -> frozenset[str]:
    """The causes named by ``exclude=`` (and ``truncated=exclude``); 422 for an unknown one (the
    parameter's pattern refuses it first)."""
    try:
        chosen = parse_exclude(text)
    except InputError as e:
        raise HTTPException(422, str(e)) from None
    return chosen | ({TRUNCATED} if truncated == "exclude" else set())


def samples_query(
    benchmark: Annotated[str | None, Query(max_length=500)] = None,
    category: Annotated[str | None, Query(max_length=200)] = None,
    transition: Transition = "10",
    q: Annotated[str | None, Query(max_length=200)] = None,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=500)] = PAGE_SIZE,
    truncated: Truncated = "include",
    exclude: Exclude = None,
    cause: Annotated[
        Literal["", "no_answer", "truncated", "refused"] | None,
        Query(
            description="only the seeds whose answer (either side's) has this cause (empty: any)"
        ),
    ] = None,
) -> SamplesQuery:
    return SamplesQuery(
        benchmark=benchmark or None,
        category=None if category in (None, "", TOTAL) else category,
        transition=transition,
        q=q or None,
        page=page,
        page_size=page_size,
        exclude=excluded(exclude, truncated),
        cause=cause or None,
    )


@dataclass(frozen=True)
class SampleRef:
    """One sample of a pair, named the same way by the sample page and ``GET .../sample``."""

    benchmark: str
    sample_id: str


def sample_ref(
    benchmark: Annotated[str, Query(min_length=1, max_length=500)],
    sample_id: Annotated[str, Query(min_length=1, max_length=1000)],
) -> SampleRef:
    return SampleRef(benchmark, sample_id)


def benchmark_filter(
    request: Request, benchmark: str | None, category: str | None
) -> list[int] | None:
    """Benchmark ids to drill into (None: all; the "Total" column means all); 404 for a name the
    store does not know."""
    if category == TOTAL:
        category = None
    if not benchmark and not category:
        return None
    with store(request).read() as conn:
        if benchmark:
            ids = queries.benchmark_ids(conn, name=benchmark)
            if not ids:
                raise HTTPException(
                    404, f"benchmark {benchmark!r} does not exist; GET /api/benchmarks lists them"
                )
            return ids
        ids = queries.benchmark_ids(conn, category=category)
    if not ids:
        raise HTTPException(404, f"category {category!r} has no benchmarks")
    return ids


def pair_rows(request: Request, pair_id: int, exclude: frozenset[str] = frozenset()) -> list[dict]:
    """The pair page's per-benchmark table (intervals included), kept until the next write;
    ``exclude``: the causes whose samples are left out of every count."""
    mask = cause_mask(exclude)
    return map_cache(request).cache.get(
        ("pair", pair_id, mask), lambda: pair_benchmarks(store(request), pair_id, exclude=mask)
    )


def pair_exclude(exclude: Exclude = None) -> frozenset[str]:
    """A pair page's ``exclude=`` (as the map's); 422 for an unknown cause."""
    return excluded(exclude)


def flipped(request: Request, pair: dict, query: SamplesQuery):
    """One page of a drill-down, kept until the next write (``exclude``: samples whose answer had
    one of those causes in every seed shown left out; ``cause``: only those); 404 for a benchmark or
    category the store does not know."""
    ids = benchmark_filter(request, query.benchmark, query.category)

    def load():
        with store(request).read() as conn:
            return flips.flipped_samples(
                conn,
                pair,
                benchmarks=ids,
                transition=query.transition,
                q=query.q,
                page=query.page,
                page_size=query.page_size,
                exclude=cause_mask(query.exclude),
                cause=cause_mask([query.cause] if query.cause else []),
            )

    def marked():
        total, rows = load()
        return total, mark_reliable(rows, pair_rows(request, pair["id"], query.exclude))

    key = ("flipped", pair["id"], tuple(ids) if ids is not None else None, query)
    return map_cache(request).cache.get(key, marked)


def sample_seeds(request: Request, pair: dict, ref: SampleRef) -> list[dict]:
    """Both models' answers to one sample, per seed; 404 for a benchmark or sample not there."""
    ids = benchmark_filter(request, ref.benchmark, None)
    assert ids is not None  # ``ref`` names a benchmark (at least one character)
    [bench_id] = ids
    with store(request).read() as conn:
        seeds = flips.sample_detail(conn, pair, bench_id, ref.sample_id)
    if not seeds:
        raise HTTPException(
            404, f"sample {ref.sample_id!r} of {ref.benchmark!r} is not in pair {pair['id']}"
        )
    return seeds


def pairing(request: Request, pair_id: int) -> list[dict]:
    """How the pair's samples paired, per benchmark (queries.pairing_report)."""
    with store(request).read() as conn:
        return queries.pairing_report(conn, pair_id)


def pair_recoveries(request: Request, pair_id: int) -> list[dict]:
    with store(request).read() as conn:
        return recoveries.pair_recoveries(conn, pair_id)


def get_recovery(request: Request, recovery_id: int) -> dict:
    with store(request).read() as conn:
        found = recoveries.recovery(conn, recovery_id)
    if found is None:
        raise HTTPException(404, f"recovery analysis {recovery_id} does not exist")
    return found


def recovery_column(request: Request, correction: str = "bias_temp") -> list[dict]:
    """Per pair with an analysis: the headline numbers of its newest one (cached per data
    version)."""

    def load() -> list[dict]:
        with store(request).read() as conn:
            return [headline(r, correction) for r in recoveries.latest_recoveries(conn)]

    return map_cache(request).cache.get(("recovery", correction), load)


def lab_params(
    separation: Annotated[
        float, Query(ge=2.0, le=12.0, description="distance between the modes")
    ] = 6.0,
    sigma: Annotated[float, Query(ge=0.25, le=4.0)] = 1.0,
    replay: Annotated[float, Query(ge=0.0, le=0.9, description="replay fraction lambda")] = 0.3,
    # above ~2.5 the lab's dynamics diverge; the grid cap and time budget back this range up
    lr: Annotated[float, Query(gt=0.0, le=2.0, description="gradient step size")] = 1.0,
    steps: Annotated[int, Query(ge=10, le=1000)] = 300,
    batch_size: Annotated[int, Query(ge=1, le=256)] = 8,
) -> LabParams:
    """The theory lab's parameters, for its page and ``GET /api/theory``."""
    return LabParams(separation, sigma, replay, lr, steps, batch_size)
