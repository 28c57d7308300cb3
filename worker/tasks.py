"""The Celery app of the workers and its one task: run a shard (an evaluation, or a
recoverability analysis: ``worker/recoverability_job.py``).

Reliability: ``acks_late`` + ``reject_on_worker_lost`` put a task back on the queue when its worker
dies mid-shard (with Redis, after the visibility timeout); the app's shard state makes a repeated
delivery harmless (a finished shard is skipped, re-uploaded rows are kept once). Network trouble
talking to the app is retried with exponential backoff; a shard that cannot succeed (bad model
path, unknown benchmark, model that does not load) is marked failed with its message and the
other shards go on.

A token the app refuses (401: unknown or revoked; 403: a role other than worker) fails every
shard the same way, so the worker checks it before it takes a message and, should the app refuse
it later, puts the shard's message back on the queue and stops with the reason instead of
draining the queue into failures.
"""

from __future__ import annotations

import logging
import os

from celery import Celery
from celery.exceptions import Reject
from celery.worker import state as worker_state
from forgetmap.contract.jobs import ShardKind, ShardStatus
from forgetmap.runtime.broker import TASK_NAME
from forgetmap.worker.client import AppClient, AppRejected, AppUnavailable, TokenRefused
from forgetmap.worker.engines import make_engine
from forgetmap.worker.evaluate import EngineCache, ShardFailed, run_shard
from forgetmap.worker.judge import run_judge_shard
from forgetmap.worker.merge_job import run_merge_shard
from forgetmap.worker.probe import run_probe_shard
from forgetmap.worker.recoverability_job import run_recover_shard
from forgetmap.worker.settings import WorkerSettings

log = logging.getLogger("forgetmap.worker")
WORKER_TOKEN_FIX = "`forgetmap token create NAME --role worker`"


def token_problem(settings: WorkerSettings, refusal: TokenRefused) -> str:
    """One line: which worker, which app, what it said, and how to fix it."""
    what = "does not accept its token" if refusal.status == 401 else "refuses its token's role"
    return (
        f"worker {settings.name}: the app at {settings.app_url} {what} ({refusal}); give it a "
        f"token of role worker: create one with {WORKER_TOKEN_FIX} and set FORGETMAP_API_TOKEN"
    )


def make_worker_app(settings: WorkerSettings) -> Celery:
    celery = Celery("forgetmap-worker")
    celery.conf.update(settings.broker.celery_config())
    celery.conf.update(worker_hijack_root_logger=False, worker_send_task_events=False)
    engines = EngineCache(factory=make_engine)

    @celery.task(
        name=TASK_NAME,
        bind=True,
        acks_late=True,
        reject_on_worker_lost=True,
        autoretry_for=(AppUnavailable,),
        retry_backoff=2,
        retry_backoff_max=300,
        retry_jitter=True,
        max_retries=20,
    )
    def evaluate_shard(self, shard_id: int) -> str:
        client = AppClient(settings.app_url, settings.token, worker_name=settings.name)
        try:
            return run_one(client, shard_id, self.request.id)
        except TokenRefused as exc:
            # every shard would fail the same way: keep this one and stop taking more
            log.error(
                "%s; stopping, shard %d goes back to the queue",
                token_problem(settings, exc),
                shard_id,
            )
            celery.token_refused = exc
            worker_state.should_stop = 1  # the consumer loop ends before it takes another message
            raise Reject(str(exc), requeue=True) from None
        finally:
            client.close()

    def run_one(client: AppClient, shard_id: int, delivery: str) -> str:
        shard = client.start(shard_id, settings.name, delivery)
        if shard is None:
            log.info("shard %d: nothing to do (finished, cancelled or running elsewhere)", shard_id)
            return "skipped"
        try:
            if shard.kind == ShardKind.recover:
                engines.close()  # the analysis loads its own models (transformers, full logits)
                return run_recover_shard(shard, client=client, settings=settings)
            if shard.kind == ShardKind.probe:
                return run_probe_shard(shard, client=client, engines=engines, settings=settings)
            if shard.kind == ShardKind.judge:
                return run_judge_shard(shard, client=client, engines=engines, settings=settings)
            if shard.kind == ShardKind.merge:
                return run_merge_shard(
                    shard, client=client, engines=engines, settings=settings, delivery=delivery
                )
            return run_shard(shard, client=client, engines=engines, settings=settings)
        except ShardFailed as exc:
            log.error("shard %d failed: %s", shard_id, exc)
            client.fail(shard_id, str(exc))
            return ShardStatus.failed
        except AppRejected as exc:
            log.error("shard %d: the app refused an upload: %s", shard_id, exc)
            client.fail(shard_id, f"the app refused the results: {exc}")
            return ShardStatus.failed
        except (AppUnavailable, TokenRefused):
            raise  # Celery retries the task with backoff; a refused token stops the worker
        # a bug or an engine crash: record it rather than leave it running
        except Exception as exc:
            log.exception("shard %d crashed", shard_id)
            client.fail(shard_id, f"worker error: {type(exc).__name__}: {exc}")
            return ShardStatus.failed

    celery.evaluate_shard = evaluate_shard
    celery.token_refused = None  # set when the app refused the token mid-run
    return celery


def check_token(settings: WorkerSettings) -> None:
    """Ask the app whether it accepts the token before taking any message: a refused one stops
    the worker here with the reason. An app not reachable yet (``forgetmap up`` starts both at
    once) is no reason to refuse to start; the first shard's calls check the token then."""
    client = AppClient(settings.app_url, settings.token, worker_name=settings.name)
    try:
        holder = client.whoami()
    except TokenRefused as exc:
        raise SystemExit(f"error: {token_problem(settings, exc)}") from None
    except (AppUnavailable, AppRejected) as exc:
        log.warning(
            "worker %s: could not check its token with the app (%s); going on", settings.name, exc
        )
        return
    finally:
        client.close()
    log.info(
        "worker %s: the app accepts its token %r (role %s)",
        settings.name,
        holder["token"],
        holder["role"],
    )


def run_worker(settings: WorkerSettings, *, loglevel: str = "INFO") -> None:
    """Run a worker in this process (pool 'solo': one task at a time, one engine in memory)."""
    logging.basicConfig(level=loglevel, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per upload drowns the shard log
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:
        pass
    if not settings.token:
        raise SystemExit(
            f"error: FORGETMAP_API_TOKEN is not set; create one with {WORKER_TOKEN_FIX}"
        )
    check_token(settings)
    celery = make_worker_app(settings)
    log.info(
        "worker %s: queue %s on %s, app %s, model roots %s, hub ids %s",
        settings.name,
        settings.broker.queue,
        settings.broker.url
        or f"the embedded queue in {settings.broker.data_dir.resolve() / 'broker'}",
        settings.app_url,
        ", ".join(map(str, settings.model_roots)) or "none",
        "allowed" if settings.allow_hub_models else "off",
    )
    celery.worker_main(
        [
            "worker",
            "--pool=solo",
            "--concurrency=1",
            f"--loglevel={loglevel}",
            "-Q",
            settings.broker.queue,
            "-n",
            settings.name,
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
    )
    if celery.token_refused is not None:
        raise SystemExit(f"error: {token_problem(settings, celery.token_refused)}")
