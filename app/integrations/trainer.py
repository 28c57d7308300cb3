"""`ForgetmapCallback`: each checkpoint a Hugging Face Trainer (or a TRL trainer) saves joins a
series, and its forgetting comes back into the run's own tracker at its training step.

    from forgetmap import ForgetmapCallback
    callback = ForgetmapCallback("sft-run", base="base-model", benchmarks=["mmlu"])
    trainer = Trainer(..., callbacks=[callback])

On ``on_save`` (main process only) the callback takes the ``checkpoint-<step>`` folder the trainer
has just written and submits it through the same request as ``forgetmap watch``
(``POST /api/checkpoints`` via ``forgetmap.services.watch.submit_all``: the same model-root rules,
role and token). Trainer deletes old checkpoints right after a save when ``save_total_limit`` is
set, long before a worker reads them, so with a ``staging_dir`` (under one of the app's model roots)
the folder is first hard-linked there (copied where a link cannot cross file systems), and the
staged copy is submitted and removed once its results are in. Without one, and with a
``save_total_limit``, the callback says at the start of training which checkpoints it cannot
protect.

Training never waits and never fails because of forgetmap: submissions and result polling run in
one background thread; an app that cannot be reached is a warning and a retry, later each time
(up to every 10 minutes).
Results of finished steps are written by ``forgetmap.integrations.trackers`` to the trackers the
trainer reports to (``args.report_to``: W&B, MLflow, TensorBoard) at their training steps, late
or not. ``on_train_end`` waits up to ``wait_at_end`` seconds for steps still being evaluated;
whatever finishes later, ``forgetmap series export NAME --to ...`` writes afterwards.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from forgetmap.contract.jobs import CheckpointSubmission
from forgetmap.services.watch import Checkpoint, WatchSettings, submit_all
from transformers import TrainerCallback

log = logging.getLogger("forgetmap.trainer")

MAX_RETRY_SECONDS = 600.0
"""The longest wait between two submissions of checkpoints the app did not take."""

TRACKERS = ("wandb", "mlflow", "tensorboard")
"""The trackers of ``args.report_to`` that results are written back to."""


@dataclass
class _Step:
    """One checkpoint on its way: staged, submitted, evaluated, written."""

    step: int
    folder: Path
    staged: bool
    job_id: int | None = None
    done: bool = False
    written: set[str] = field(default_factory=set)  # trackers that have its results
    finished: bool = False  # evaluated, written everywhere, unstaged


class ForgetmapCallback(TrainerCallback):
    """Submits every saved checkpoint to a forgetmap series and writes its forgetting back.

    Args:
        series: the series the checkpoints join (created by the first one).
        base: the base model's name in forgetmap; ``base_path`` its folder or Hub id when the app
            does not know it yet.
        benchmarks, seeds, config: what each checkpoint is evaluated on and how (the fields of a
            job's ``config``: engine, mode, max_tokens, limit, ...), checked here, before training.
        app_url, token: the app (default ``$FORGETMAP_APP_URL``, else http://127.0.0.1:8000) and a
            token with the submit role (default ``$FORGETMAP_API_TOKEN``).
        staging_dir: a folder under one of the app's model roots where checkpoints are linked
            before they are submitted (default ``$FORGETMAP_STAGING_DIR``); needed when
            ``save_total_limit`` may delete a checkpoint before a worker has read it.
        report_to: trackers to write results to; default: those of ``args.report_to``.
        poll_every: seconds between the background thread's rounds (submit, poll, write).
        wait_at_end: seconds ``on_train_end`` waits for steps still being evaluated.
        keep_staged: keep staged folders after their results are in.
    """

    def __init__(
        self,
        series: str,
        *,
        base: str,
        benchmarks: Sequence[str],
        base_path: str | None = None,
        seeds: Sequence[int] = (0, 1, 2),
        config: dict[str, Any] | None = None,
        app_url: str | None = None,
        token: str | None = None,
        staging_dir: str | os.PathLike | None = None,
        report_to: Sequence[str] | None = None,
        poll_every: float = 30.0,
        wait_at_end: float = 0.0,
        keep_staged: bool = False,
    ):
        # a wrong argument is an error now, before training starts, not a warning at step 500
        request = CheckpointSubmission(
            series=series,
            base=base,
            base_path=base_path,
            folder="-",
            step=0,
            benchmarks=list(benchmarks),
            seeds=list(seeds),
            config=config or {},
        )
        token = token or os.environ.get("FORGETMAP_API_TOKEN")
        if not token:
            raise ValueError(
                "ForgetmapCallback needs a token with the submit role: token=... or "
                "$FORGETMAP_API_TOKEN (`forgetmap token create NAME`)"
            )
        unknown = set(report_to or ()) - set(TRACKERS)
        if unknown:
            raise ValueError(f"report_to: unknown tracker(s) {sorted(unknown)}; known: {TRACKERS}")
        staging = staging_dir or os.environ.get("FORGETMAP_STAGING_DIR")
        self.settings = WatchSettings(
            root=Path("."),
            series=request.series,
            base=request.base,
            app_url=app_url or os.environ.get("FORGETMAP_APP_URL", "http://127.0.0.1:8000"),
            token=token,
            benchmarks=request.benchmarks,
            seeds=request.seeds,
            config=request.config.model_dump(),
            base_path=_local_or_hub(request.base_path),
        )
        self.staging_dir = Path(staging).resolve() if staging else None
        self.report_to = list(report_to) if report_to is not None else None
        self.poll_every = poll_every
        self.wait_at_end = wait_at_end
        self.keep_staged = keep_staged
        self.steps: dict[int, _Step] = {}
        self.writers: dict[str, Any] = {}
        self._targets: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._series_id: int | None = None
        self._warned: set[str] = set()
        self._retry_wait = 0.0  # seconds between submissions while the app refuses them
        self._retry_at = 0.0

    # ------------------------------------------------------------------ the trainer's events

    def on_train_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        if args.save_total_limit and self.staging_dir is None:
            log.warning(
                "save_total_limit=%s deletes checkpoints after the next save, maybe before a "
                "worker reads them: give ForgetmapCallback a staging_dir under one of the app's "
                "model roots (or $FORGETMAP_STAGING_DIR) to keep each until it is evaluated",
                args.save_total_limit,
            )

    def on_save(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        try:
            self._tracker_targets(args)  # read in this thread: MLflow's active run is per thread
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            staged = self._stage(folder, state.global_step) if self.staging_dir else None
            with self._lock:
                self.steps[state.global_step] = _Step(
                    state.global_step, (staged or folder).resolve(), staged is not None
                )
            self._start()
            self._wake.set()
        except Exception as exc:  # forgetmap must never stop a training run
            log.warning("step %d: not submitted to forgetmap: %s", state.global_step, exc)

    def on_train_end(self, args, state, control, **kwargs):
        if not state.is_world_process_zero or self._thread is None:
            return
        deadline = time.monotonic() + self.wait_at_end
        while time.monotonic() < deadline and not self._all_written():
            self._wake.set()
            time.sleep(min(1.0, self.poll_every))
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=60)
        left = sorted(s.step for s in self.steps.values() if not s.finished)
        if left:
            log.warning(
                "forgetmap: steps %s not evaluated yet; when they are, write them with "
                "`forgetmap series export %s --to ...`",
                left,
                self.settings.series,
            )
        for writer in self.writers.values():
            try:
                writer.close()
            except Exception as exc:
                log.warning("forgetmap: closing %s: %s", writer.name, exc)

    # ------------------------------------------------------------------ staging

    def _stage(self, folder: Path, step: int) -> Path:
        """A copy of ``folder`` that save_total_limit cannot delete: hard links where the file
        system allows, else copies; built aside and renamed, so it is complete when it appears."""
        assert self.staging_dir is not None  # called only with one
        target = self.staging_dir / self.settings.series / folder.name
        if target.exists():
            return target
        partial = target.with_name(f".{folder.name}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(folder, partial, copy_function=_link_or_copy)
        partial.rename(target)
        log.info("forgetmap: step %d staged in %s", step, target)
        return target

    # ------------------------------------------------------------------ the background thread

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="forgetmap", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        headers = {"Authorization": f"Bearer {self.settings.token}"}
        with httpx.Client(base_url=self.settings.app_url, headers=headers, timeout=30) as client:
            while True:
                try:
                    self._round(client)
                except Exception as exc:  # a bad answer, a tracker error: try again next round
                    self._warn_once(repr(exc), f"forgetmap: {exc}; will retry")
                if self._stop.is_set():
                    return
                self._wake.wait(self.poll_every)
                self._wake.clear()

    def _round(self, client: httpx.Client) -> None:
        with self._lock:
            steps = list(self.steps.values())
        unsent = [s for s in steps if s.job_id is None]
        if unsent and time.monotonic() >= self._retry_at:
            checkpoints = [Checkpoint(s.step, s.folder) for s in unsent]
            for answer in submit_all(client, self.settings, checkpoints):
                self.steps[answer["step"]].job_id = answer["job_id"]
            # an app that refused or could not be reached is asked again later and later (each
            # try logs a warning per step): twice the wait each time, up to MAX_RETRY_SECONDS
            if any(s.job_id is None for s in unsent):
                self._retry_wait = min(2 * self._retry_wait or self.poll_every, MAX_RETRY_SECONDS)
                self._retry_at = time.monotonic() + self._retry_wait
            else:
                self._retry_wait = 0.0
        for s in steps:
            if s.job_id is not None and not s.done:
                job = _get(client, f"/api/jobs/{s.job_id}")
                s.done = job["status"] == "done"
                if job["status"] == "failed":
                    self._warn_once(
                        f"failed-{s.step}",
                        f"forgetmap: the evaluation of step "
                        f"{s.step} failed; see {self.settings.app_url}/jobs/{s.job_id}",
                    )
        ready = [s for s in steps if s.done and not s.finished]
        if ready:
            self._write(client, ready)
        for s in ready:
            if set(self._targets) <= s.written:
                s.finished = True
                if s.staged and not self.keep_staged:  # its results are in: not needed any more
                    shutil.rmtree(s.folder, ignore_errors=True)

    def _write(self, client: httpx.Client, ready: list[_Step]) -> None:
        from forgetmap.contract.series import SeriesExport

        if not self._targets:
            return
        if self._series_id is None:
            self._series_id = _series_id(client, self.settings.series)
        params = [("steps", s.step) for s in ready]
        export = SeriesExport.model_validate(
            _get(client, f"/api/series/{self._series_id}/export", params=params)
        )
        for name, writer in self._open_writers().items():
            todo = [s.step for s in ready if name not in s.written]
            if todo:
                for step in writer.write(export, todo):
                    self.steps[step].written.add(name)

    # ------------------------------------------------------------------ trackers

    def _tracker_targets(self, args) -> None:
        """Which runs to write to, read where the trainer's reporting callbacks keep them."""
        wanted = self.report_to
        if wanted is None:
            report_to = args.report_to if isinstance(args.report_to, list) else [args.report_to]
            wanted = [t for t in TRACKERS if t in report_to or "all" in report_to]
        self._targets = {}
        for name in wanted:
            target = _current_run(name, args)
            if target is None:
                self._warn_once(
                    f"no-{name}", f"forgetmap: no open {name} run; results are not written to it"
                )
            else:
                self._targets[name] = target

    def _open_writers(self) -> dict[str, Any]:
        from forgetmap.integrations import trackers

        for name, target in self._targets.items():
            if name not in self.writers:
                if name == "wandb":
                    self.writers[name] = trackers.WandbWriter(target)
                elif name == "mlflow":
                    self.writers[name] = trackers.MlflowWriter(target[0], tracking_uri=target[1])
                else:
                    self.writers[name] = trackers.TensorBoardWriter(target)
        return self.writers

    def _all_written(self) -> bool:
        with self._lock:
            return all(s.finished for s in self.steps.values())

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message)


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or links not allowed
        shutil.copy2(source, target)


def _get(client: httpx.Client, path: str, **kwargs) -> Any:
    response = client.get(path, **kwargs)
    response.raise_for_status()
    return response.json()


def _series_id(client: httpx.Client, name: str) -> int:
    for series in _get(client, "/api/series"):
        if series["name"] == name:
            return series["id"]
    raise LookupError(f"series {name!r} is not in the app yet")


def _current_run(name: str, args) -> Any:
    """The open run of a tracker in this process: the W&B run, (MLflow run id, tracking URI),
    or TensorBoard's log folder; None when there is none."""
    if name == "wandb":
        import wandb

        return wandb.run
    if name == "mlflow":
        import mlflow

        run = mlflow.active_run()
        return (run.info.run_id, mlflow.get_tracking_uri()) if run is not None else None
    return _tensorboard_logdir(args)


def _tensorboard_logdir(args) -> str | None:
    """Where transformers' TensorBoardCallback writes: $TENSORBOARD_LOGGING_DIR, else the newest
    ``<output_dir>/runs/<time>_<host>`` folder holding event files (it made it at train begin)."""
    if os.environ.get("TENSORBOARD_LOGGING_DIR"):
        return os.path.expanduser(os.environ["TENSORBOARD_LOGGING_DIR"])
    folders = {p.parent for p in Path(args.output_dir, "runs").glob("*/events.out.tfevents.*")}
    return str(max(folders, key=lambda p: p.stat().st_mtime)) if folders else None


def _local_or_hub(base_path: str | None) -> str | None:
    """A base model folder that exists here, made absolute: the app looks a relative path up
    under its model roots, never in this script's working directory. Anything else (a hub id)
    as given."""
    if base_path and Path(base_path).expanduser().is_dir():
        return str(Path(base_path).expanduser().resolve())
    return base_path
