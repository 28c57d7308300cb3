"""The worker's only line to the app: HTTP calls with a token, retried with backoff. Bodies
and answers are the app's own models (app/contract), so a body the app would refuse fails here.

Transient problems (connection refused, timeouts, 5xx, 429) are retried; a 4xx means the request
itself is wrong and raises ``AppRejected`` at once.
"""

from __future__ import annotations

import logging
import time

import httpx
from pydantic import BaseModel

from app.contract.recovery import RecoveryIn
from app.contract.results import ResultRow, ResultsIn
from app.contract.shards import (
    FailIn,
    FinishIn,
    ProgressIn,
    ShardClaim,
    ShardData,
    ShardState,
    StartIn,
)

log = logging.getLogger("forgetmap.worker")


class AppUnavailable(RuntimeError):
    """The app could not be reached after retries (the task is retried later)."""


class AppRejected(RuntimeError):
    """The app refused a request (4xx): retrying will not help."""


class AppClient:
    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        attempts: int = 6,
        backoff: float = 0.5,
        timeout: float = 60,
    ):
        self.base_url = base_url.rstrip("/")
        self.attempts = attempts
        self.backoff = backoff
        self._http = httpx.Client(timeout=timeout, headers={"Authorization": f"Bearer {token}"})

    def post(self, path: str, body: BaseModel) -> dict:
        """POST a contract body (app/contract) as its JSON; the app's answer as parsed JSON."""
        payload = body.model_dump(mode="json")
        delay = self.backoff
        for attempt in range(1, self.attempts + 1):
            try:
                response = self._http.post(self.base_url + path, json=payload)
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 400:
                    return response.json()
                if response.status_code < 500 and response.status_code != 429:
                    raise AppRejected(
                        f"POST {path} -> {response.status_code}: {response.text[:500]}"
                    )
                problem = f"HTTP {response.status_code}"
            if attempt < self.attempts:
                log.warning(
                    "POST %s failed (%s); retry %d/%d in %.1fs",
                    path,
                    problem,
                    attempt,
                    self.attempts - 1,
                    delay,
                )
                time.sleep(delay)
                delay = min(delay * 2, 30)
        raise AppUnavailable(f"POST {path} failed {self.attempts} times: {problem}")

    def start(self, shard_id: int, worker: str, delivery: str | None = None) -> dict | None:
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
