"""The worker's only line to the app: HTTP calls with a token, retried with backoff. Bodies
and answers are the app's own models (app/contract), so a body the app would refuse fails here.

Transient problems (connection refused, timeouts, 5xx, 429) are retried; a 401 or 403 means the
app refuses this worker's token, whatever it asks, and raises ``TokenRefused`` at once; any other
4xx means the request itself is wrong and raises ``AppRejected`` at once.
"""

from __future__ import annotations

import logging
import time

import httpx
from forgetmap.contract.errors import reply_detail
from forgetmap.contract.judge import JudgeIn, JudgeItemsOut
from forgetmap.contract.probe import ProbeIn, ProbeItemsOut
from forgetmap.contract.recovery import RecoveryIn
from forgetmap.contract.results import ResultRow, ResultsIn
from forgetmap.contract.shards import (
    WORKER_HEADER,
    ClaimedShard,
    FailIn,
    FinishIn,
    ProgressIn,
    ShardClaim,
    ShardData,
    ShardState,
    StartIn,
)
from pydantic import BaseModel

log = logging.getLogger("forgetmap.worker")


class AppUnavailable(RuntimeError):
    """The app could not be reached after retries (the task is retried later)."""


class AppRejected(RuntimeError):
    """The app refused a request (4xx): retrying will not help."""


class TokenRefused(Exception):
    """The app refused the worker's token (401: unknown or revoked) or its role (403): no call
    will succeed until the token is replaced. Not a RuntimeError, so no shard code that turns
    errors into a failed shard catches it: the worker stops instead and its shard goes back."""

    def __init__(self, status: int, detail: str):
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status
        self.detail = detail


def _detail(response: httpx.Response) -> str:
    """The app's one-line error (``{"detail": ...}``), else the start of the body."""
    return reply_detail(response) or response.text[:500]


class AppClient:
    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        attempts: int = 6,
        backoff: float = 0.5,
        timeout: float = 60,
        worker_name: str | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.attempts = attempts
        self.backoff = backoff
        headers = {"Authorization": f"Bearer {token}"}
        if worker_name:
            headers[WORKER_HEADER] = worker_name
        self._http = httpx.Client(timeout=timeout, headers=headers)

    def post(self, path: str, body: BaseModel) -> dict:
        """POST a contract body (app/contract) as its JSON; the app's answer as parsed JSON."""
        return self._call("POST", path, body.model_dump(mode="json"))

    def whoami(self) -> dict:
        """The token's holder as the app sees it (``GET /api/workers/me``): one cheap call that
        raises ``TokenRefused`` for a token the app would refuse on every shard."""
        return self._call("GET", "/api/workers/me", None)

    def _call(self, method: str, path: str, payload: dict | None) -> dict:
        delay = self.backoff
        for attempt in range(1, self.attempts + 1):
            try:
                response = self._http.request(method, self.base_url + path, json=payload)
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                status = response.status_code
                if status < 400:
                    return response.json()
                if status in (401, 403):
                    raise TokenRefused(status, _detail(response))
                if status < 500 and status != 429:
                    raise AppRejected(f"{method} {path} -> {status}: {response.text[:500]}")
                problem = f"HTTP {status}"
            if attempt < self.attempts:
                log.warning(
                    "%s %s failed (%s); retry %d/%d in %.1fs",
                    method,
                    path,
                    problem,
                    attempt,
                    self.attempts - 1,
                    delay,
                )
                time.sleep(delay)
                delay = min(delay * 2, 30)
        raise AppUnavailable(f"{method} {path} failed {self.attempts} times: {problem}")

    def start(self, shard_id: int, worker: str, delivery: str | None = None) -> ClaimedShard | None:
        """Claim the shard; None when there is nothing to run (finished, cancelled, or running
        under another delivery of a re-sent message)."""
        body = StartIn(worker=worker, delivery=delivery)
        claim = ShardClaim.model_validate(self.post(f"/api/shards/{shard_id}/start", body))
        return claim.shard if claim.run else None

    def progress(self, shard_id: int, done: int, total: int) -> str:
        body = ProgressIn(done=done, total=total)
        return ShardState.model_validate(self.post(f"/api/shards/{shard_id}/progress", body)).status

    def results(self, shard_id: int, rows: list[ResultRow]) -> dict:
        return self.post("/api/results", ResultsIn(shard_id=shard_id, rows=rows))

    def recovery(self, shard_id: int, body: RecoveryIn) -> dict:
        return self.post(f"/api/shards/{shard_id}/recovery", body)

    def probe_items(self, shard_id: int) -> ProbeItemsOut:
        """A probe shard's items (``GET /api/shards/{id}/probe``)."""
        return ProbeItemsOut.model_validate(
            self._call("GET", f"/api/shards/{shard_id}/probe", None)
        )

    def probe(self, shard_id: int, body: ProbeIn) -> dict:
        return self.post(f"/api/shards/{shard_id}/probe", body)

    def judge_items(self, shard_id: int) -> JudgeItemsOut:
        """A judge shard's items (``GET /api/shards/{id}/judge``)."""
        return JudgeItemsOut.model_validate(
            self._call("GET", f"/api/shards/{shard_id}/judge", None)
        )

    def judge(self, shard_id: int, body: JudgeIn) -> dict:
        return self.post(f"/api/shards/{shard_id}/judge", body)

    def finish(
        self,
        shard_id: int,
        fingerprint: str | None,
        data: ShardData | None = None,
        full_size: int | None = None,
    ) -> str:
        """Mark the shard done; ``full_size``: the samples the benchmark has (as loaded).
        Returns the shard's status after it: ``done``, or ``cancelled`` when it was cancelled
        while its last batch ran."""
        body = FinishIn(fingerprint=fingerprint, data=data, full_size=full_size)
        return ShardState.model_validate(self.post(f"/api/shards/{shard_id}/finish", body)).status

    def fail(self, shard_id: int, error: str) -> None:
        self.post(f"/api/shards/{shard_id}/fail", FailIn(error=error))

    def close(self) -> None:
        self._http.close()
