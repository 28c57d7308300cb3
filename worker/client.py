"""The worker's only line to the app: HTTP calls with a token, retried with backoff.

Transient problems (connection refused, timeouts, 5xx, 429) are retried; a 4xx means the request
itself is wrong and raises ``AppRejected`` at once.
"""

from __future__ import annotations

import logging
import time

import httpx

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

    def post(self, path: str, body: dict) -> dict:
        delay = self.backoff
        for attempt in range(1, self.attempts + 1):
            try:
                response = self._http.post(self.base_url + path, json=body)
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
        body = self.post(f"/api/shards/{shard_id}/start", {"worker": worker, "delivery": delivery})
        return body["shard"] if body["run"] else None

    def progress(self, shard_id: int, done: int, total: int) -> str:
        return self.post(f"/api/shards/{shard_id}/progress", {"done": done, "total": total})[
            "status"
        ]

    def results(self, shard_id: int, rows: list[dict]) -> dict:
        return self.post("/api/results", {"shard_id": shard_id, "rows": rows})

    def recovery(self, shard_id: int, body: dict) -> dict:
        return self.post(f"/api/shards/{shard_id}/recovery", body)

    def finish(
        self,
        shard_id: int,
        fingerprint: str | None,
        data: dict | None = None,
        full_size: int | None = None,
    ) -> str:
        """Mark the shard done; ``full_size``: the samples the benchmark has (as loaded).
        Returns the shard's status after it: ``done``, or ``cancelled`` when it was cancelled
        while its last batch ran."""
        body = {"fingerprint": fingerprint, "data": data, "full_size": full_size}
        return self.post(f"/api/shards/{shard_id}/finish", body)["status"]

    def fail(self, shard_id: int, error: str) -> None:
        self.post(f"/api/shards/{shard_id}/fail", {"error": error})

    def close(self) -> None:
        self._http.close()
