"""Sending shards to the workers' queue (the app side of Celery; no worker code is imported).

Broker: ``FORGETMAP_BROKER_URL`` (e.g. redis://host:6379/0), else an embedded filesystem queue
under the data folder that a local ``forgetmap worker`` reads too. Tasks carry only a shard id:
the database is the truth, so a lost message is re-sent by the :class:`Reconciler`.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from typing import Any

from forgetmap.db import jobs as jobs_db
from forgetmap.runtime.broker import TASK_NAME, BrokerSettings

log = logging.getLogger("forgetmap.reconciler")


def make_producer(settings: BrokerSettings):
    from celery import Celery

    app = Celery("forgetmap-app")
    app.conf.update(settings.celery_config())
    return app


class Enqueuer:
    """Sends shard ids; errors are reported, never raised into a request (the job is saved)."""

    def __init__(self, settings: BrokerSettings):
        self.settings = settings
        self._celery: Any = None  # the Celery app (celery has no type information), once used

    def send(self, shard_ids: list[int]) -> tuple[list[int], str | None]:
        """Send shards in order; returns the ids sent and, if the broker failed, why."""
        sent: list[int] = []
        try:
            if shard_ids and self._celery is None:
                self._celery = make_producer(self.settings)
            for shard_id in shard_ids:
                self._celery.send_task(
                    TASK_NAME,
                    args=[shard_id],
                    queue=self.settings.queue,
                    retry=True,
                    retry_policy={"max_retries": 1, "interval_start": 0.2, "interval_step": 0.5},
                )
                sent.append(shard_id)
        except Exception as exc:  # broker unreachable: the job stays queued in the database
            # A broker that lost its data (a Redis restart, FLUSHDB) also lost the queue's
            # routing binding, which this producer declared once and caches: start afresh, so
            # the next send declares it again.
            self._celery = None
            return sent, (
                f"the queue is unreachable ({type(exc).__name__}); the job is saved and its shards "
                "will be sent when the queue is back"
            )
        return sent, None

    def held(self) -> set[int] | None:
        """Shard ids whose message the broker still holds, waiting or delivered but not yet
        acknowledged; None when the broker cannot be asked (the embedded queue, or an error)."""
        if not self.settings.url or not self.settings.url.startswith(("redis://", "rediss://")):
            return None
        try:
            import redis

            client = redis.Redis.from_url(
                self.settings.url, socket_connect_timeout=3, socket_timeout=10
            )
            queue = self.settings.queue
            # kombu keeps priority levels in sibling lists named queue + '\x06\x16' + level
            lists = [queue, *client.scan_iter(match=f"{queue}\x06\x16*", count=1000)]
            messages = [m for key in lists for m in client.lrange(key, 0, -1)]
            # delivered, not yet acknowledged: values are JSON [message, exchange, routing key]
            messages += [json.loads(v)[0] for v in client.hvals("unacked")]
            client.close()
        except Exception:  # noqa: BLE001 - cannot ask: the caller falls back to time bounds
            log.warning("could not list the broker's messages", exc_info=True)
            return None
        return {sid for m in messages if (sid := _shard_of(m)) is not None}


def _shard_of(message) -> int | None:
    """The shard id a Celery message carries, or None for anything else."""
    try:
        if isinstance(message, (bytes, str)):
            message = json.loads(message)
        if message.get("headers", {}).get("task") != TASK_NAME:
            return None
        body = message["body"]
        if message.get("properties", {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
        return int(args[0])
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None


def send_and_record(
    store, enqueuer: Enqueuer, shard_ids: list[int], *, resend: bool = False
) -> tuple[int, str | None]:
    """Send shards and record which were sent, so the reconciler re-sends only the others."""
    sent, problem = enqueuer.send(shard_ids)
    if sent:
        with store.transaction() as conn:
            jobs_db.mark_sent(conn, sent, resend=resend)
    return len(sent), problem


class Reconciler:
    """Every ``interval`` seconds:

    - send queued shards that never reached the broker (it was down when their job was saved),
      once they have been unsent for the grace period: the request that saved them sends them
      itself just after its commit, and sending them too would queue a second copy (harmless to
      the results, but not counted as a re-send, and left in the queue after its shard ran);
    - send again queued shards whose message was lost: with Redis, those the broker no longer
      holds (asked every round, after a short grace for messages in flight); when the broker
      cannot be asked, those sent ``resend_after`` seconds ago (doubling per re-send, at most 32x)
      that no worker has started;
    - send again running shards whose worker went silent for ``stale_after`` seconds (the
      embedded queue cannot re-deliver the task of a dead worker; with Redis this backs up the
      visibility timeout).

    A repeated delivery is harmless: a shard runs under one delivery at a time
    (forgetmap.services.jobs.start_shard) and results are stored once per sample."""

    def __init__(
        self,
        store,
        enqueuer: Enqueuer,
        interval: float = 10.0,
        stale_after: float = 1800.0,
        resend_after: float = 300.0,
        grace: float | None = None,
    ):
        self.store, self.enqueuer, self.interval = store, enqueuer, interval
        self.stale_after, self.resend_after = stale_after, resend_after
        # a message just sent may be between the producer and the broker's list, or popped by a
        # worker that has not called /start yet: only older ones count as lost; likewise a shard
        # just saved is about to be sent by the request that saved it
        self.grace = min(resend_after, max(5.0, 2 * interval)) if grace is None else grace
        self._unsent_since: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="forgetmap-reconciler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def run_once(self) -> int:
        with self.store.read() as conn:
            pending = self._unsent_past_grace(jobs_db.unsent_shards(conn))
            stale = jobs_db.stale_shards(conn, self.stale_after)
        lost = self.lost_shards()
        if stale:
            log.warning(
                "shards %s sent no progress for %.0fs; sending them again", stale, self.stale_after
            )
            with self.store.transaction() as conn:
                jobs_db.requeue_stale(conn, stale)
        if lost:
            log.warning("shards %s were sent but no worker received them; sending again", lost)
        sent = (
            send_and_record(self.store, self.enqueuer, pending + stale)[0]
            if pending or stale
            else 0
        )
        if lost:
            sent += send_and_record(self.store, self.enqueuer, lost, resend=True)[0]
        return sent

    def _unsent_past_grace(self, unsent: list[int]) -> list[int]:
        """Of the shards unsent now, those unsent since at least ``grace`` seconds ago."""
        now = time.monotonic()
        since = {s: self._unsent_since.get(s, now) for s in unsent}
        self._unsent_since = since
        return [s for s, first in since.items() if now - first >= self.grace]

    def lost_shards(self) -> list[int]:
        """Queued shards sent earlier whose message no worker will receive (see the class doc)."""
        with self.store.read() as conn:
            waiting = jobs_db.waiting_shards(conn, self.grace, backoff=False)
        if not waiting:
            return []
        held = self.enqueuer.held()
        if held is not None:
            return [s for s in waiting if s not in held]
        with self.store.read() as conn:
            return jobs_db.waiting_shards(conn, self.resend_after, backoff=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                sent = self.run_once()
                if sent:
                    log.info("sent %d shard(s) that were waiting for the queue", sent)
            except Exception:  # keep reconciling; a bad round is logged, not fatal
                log.exception("reconcile round failed")
