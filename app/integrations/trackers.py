"""A series' forgetting written into the trackers where its training run is watched: W&B, MLflow
and TensorBoard (docs/integrations.md#results-in-your-tracker).

Each writer takes a ``SeriesExport`` (app/contract/series.py) and writes, per step, the metrics
``forgetmap/<category>/F_true``, ``F_true_margin``, ``BT_true``, ``BT_true_margin``,
``forgotten`` and ``learned`` ("Total" included) at the checkpoint's TRAINING step, also when
written long after it: W&B on a step axis of its own (``forgetmap/step``), MLflow and TensorBoard
at the step they are given. The flipped samples go beside them as a table (W&B ``forgetmap/flips``,
MLflow ``forgetmap/flips_step<N>.json``). Used by `forgetmap series export` and the Trainer
callback (app/integrations/trainer.py), both in the user's own process, with the user's tracker
login and files.

The libraries are the optional extra ``forgetmap[trackers]``, imported when a writer is made.
Category names become part of metric keys only through ``CategoryKeys`` (letters, digits and
``_``, valid in every tracker); answers and questions are data in the tables, never keys.
"""

from __future__ import annotations

import importlib
import re
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any, Protocol

from forgetmap.contract.series import SeriesExport, SeriesFlip
from forgetmap.core.errors import InputError
from forgetmap.core.metrics import TOTAL

PREFIX = "forgetmap"
STEP_KEY = f"{PREFIX}/step"
FLIPS_KEY = f"{PREFIX}/flips"
VALUES = (
    ("F_true", "f_true"),
    ("F_true_margin", "f_true_margin"),
    ("BT_true", "bt_true"),
    ("BT_true_margin", "bt_true_margin"),
    ("forgotten", "forgotten"),
    ("learned", "learned"),
)
"""(metric name, SeriesResult field): a margin is left out where it is None (one seed)."""
FLIP_COLUMNS = tuple(SeriesFlip.model_fields)
TARGETS = ("wandb", "mlflow", "tensorboard")
INSTALL = "pip install 'forgetmap[trackers]'"
MLFLOW_BATCH = 1000  # metrics per MlflowClient.log_batch call (MLflow's limit)


class TrackerWriter(Protocol):
    """Writes a series' export into one tracker run (or log folder)."""

    name: str
    target: str  # where it writes, in words (for the user)

    def write(self, export: SeriesExport, steps: Collection[int] | None = None) -> list[int]:
        """Write the given steps' results (all of the export's when None); the steps written,
        in order (a step asked for that has no results in the export is not written)."""
        ...

    def close(self) -> None: ...


def _library(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.partition(".")[0]
        raise InputError(f"{top} is not installed: {INSTALL}") from None


class CategoryKeys:
    """Category name -> the part of a metric key: runs of anything but letters, digits and
    ``_`` become one ``_`` (``Knowledge/QA`` -> ``Knowledge_QA``), at most 60 characters. Two
    categories that would share a key are told apart by ``_2``, ``_3``... in the order they
    are first met; "Total" is always ``Total``. Stable for the writer's life."""

    def __init__(self) -> None:
        self._keys: dict[str, str] = {TOTAL: TOTAL}

    def __call__(self, category: str) -> str:
        key = self._keys.get(category)
        if key is None:
            plain = re.sub(r"[^A-Za-z0-9_]+", "_", category).strip("_")[:60] or "category"
            taken = set(self._keys.values())
            key, n = plain, 1
            while key in taken:
                n += 1
                key = f"{plain}_{n}"
            self._keys[category] = key
        return key


def chosen_steps(export: SeriesExport, steps: Collection[int] | None) -> list[int]:
    """The export's steps with results, limited to ``steps`` when given."""
    return [s for s in export.steps if steps is None or s in steps]


def step_metrics(export: SeriesExport, keys: CategoryKeys) -> dict[int, dict[str, float]]:
    """Per step, metric key -> value (``forgetmap/<category>/<metric>``)."""
    out: dict[int, dict[str, float]] = {}
    for r in export.results:
        values = out.setdefault(r.step, {})
        for metric, field in VALUES:
            value = getattr(r, field)
            if value is not None:
                values[f"{PREFIX}/{keys(r.category)}/{metric}"] = value
    return out


def flip_table(export: SeriesExport, step: int) -> list[list]:
    """The flips of one step as table rows (``FLIP_COLUMNS``)."""
    return [[getattr(f, c) for c in FLIP_COLUMNS] for f in export.flips if f.step == step]


# ----------------------------------------------------------------------------------- W&B


class WandbWriter:
    """Into a W&B run: ``WandbWriter(wandb.run)`` in a Trainer (the run stays open), or
    ``WandbWriter.open(project, ...)`` (a new run, or ``run_id`` resumed; closed by ``close``).

    Every ``forgetmap/*`` metric is plotted against ``forgetmap/step``, logged in the same row,
    so a result written late lands at its training step. Each key is defined by name as well as
    by the glob: W&B picks among matching globs in no set order, and transformers' WandbCallback
    defines ``*`` against ``train/global_step``."""

    name = "wandb"

    def __init__(self, run: Any, *, owned: bool = False):
        self.run = run
        self._owned = owned
        self._keys = CategoryKeys()
        self._defined: set[str] = set()
        run.define_metric(STEP_KEY)
        run.define_metric(f"{PREFIX}/*", step_metric=STEP_KEY)
        where = "/".join(p for p in (run.entity, run.project) if p)
        self.target = f"wandb run {run.id}" + (f" in {where}" if where else "")

    @classmethod
    def open(
        cls,
        project: str,
        *,
        name: str | None = None,
        run_id: str | None = None,
        dir: str | Path | None = None,  # noqa: A002 - wandb.init's own name
        entity: str | None = None,
    ) -> WandbWriter:
        wandb = _library("wandb")
        try:
            run = wandb.init(
                project=project,
                name=name,
                id=run_id,
                entity=entity,
                dir=None if dir is None else str(dir),
                resume="allow" if run_id else None,
            )
        except wandb.Error as exc:
            raise InputError(f"wandb: {exc}") from None
        return cls(run, owned=True)

    def _define(self, key: str) -> None:
        if key not in self._defined:
            self.run.define_metric(key, step_metric=STEP_KEY)
            self._defined.add(key)

    def write(self, export: SeriesExport, steps: Collection[int] | None = None) -> list[int]:
        wandb = _library("wandb")
        written = chosen_steps(export, steps)
        by_step = step_metrics(export, self._keys)
        for step in written:
            row: dict[str, Any] = {STEP_KEY: step, **by_step[step]}
            flips = flip_table(export, step)
            if flips:
                row[FLIPS_KEY] = wandb.Table(columns=list(FLIP_COLUMNS), data=flips)
            for key in row:
                if key != STEP_KEY:
                    self._define(key)
            self.run.log(row)
        return written

    def close(self) -> None:
        if self._owned:
            self.run.finish()


# ----------------------------------------------------------------------------------- MLflow


class MlflowWriter:
    """Into an MLflow run by id (``mlflow.active_run().info.run_id`` in a Trainer); metrics at
    their step through ``MlflowClient``, each step's flips as ``forgetmap/flips_step<N>.json``
    (``{"columns": [...], "data": [[...], ...]}``, the layout of ``log_table``; written again
    by a later export, not appended to). ``MlflowWriter.open`` makes a new run when no id is
    given (ended by ``close``)."""

    name = "mlflow"

    def __init__(self, run_id: str, *, tracking_uri: str | None = None, owned: bool = False):
        tracking = _library("mlflow.tracking")
        self._errors = _library("mlflow.exceptions").MlflowException
        self._metric = _library("mlflow.entities").Metric
        self.run_id = run_id
        self._owned = owned
        self._keys = CategoryKeys()
        try:
            self.client = tracking.MlflowClient(tracking_uri=tracking_uri)
            self.client.get_run(run_id)  # an unknown run fails here, before anything is written
        except self._errors as exc:
            raise InputError(f"mlflow: {exc.message}") from None
        self.target = f"mlflow run {run_id} at {self.client.tracking_uri}"

    @classmethod
    def open(
        cls,
        experiment: str = PREFIX,
        *,
        name: str | None = None,
        run_id: str | None = None,
        tracking_uri: str | None = None,
    ) -> MlflowWriter:
        if run_id:
            return cls(run_id, tracking_uri=tracking_uri)
        tracking = _library("mlflow.tracking")
        errors = _library("mlflow.exceptions").MlflowException
        try:
            client = tracking.MlflowClient(tracking_uri=tracking_uri)
            found = client.get_experiment_by_name(experiment)
            experiment_id = found.experiment_id if found else client.create_experiment(experiment)
            run = client.create_run(experiment_id, run_name=name)
        except errors as exc:
            raise InputError(f"mlflow: {exc.message}") from None
        return cls(run.info.run_id, tracking_uri=tracking_uri, owned=True)

    def write(self, export: SeriesExport, steps: Collection[int] | None = None) -> list[int]:
        written = chosen_steps(export, steps)
        by_step = step_metrics(export, self._keys)
        now = int(time.time() * 1000)
        points = [
            self._metric(key, float(value), now, step)
            for step in written
            for key, value in by_step[step].items()
        ]
        try:
            for start in range(0, len(points), MLFLOW_BATCH):
                self.client.log_batch(self.run_id, metrics=points[start : start + MLFLOW_BATCH])
            for step in written:
                flips = flip_table(export, step)
                if flips:
                    table = {"columns": list(FLIP_COLUMNS), "data": flips}
                    self.client.log_dict(self.run_id, table, f"{PREFIX}/flips_step{step}.json")
        except self._errors as exc:
            raise InputError(f"mlflow: {exc.message}") from None
        return written

    def close(self) -> None:
        if self._owned:
            self.client.set_terminated(self.run_id)


# ------------------------------------------------------------------------------ TensorBoard


class TensorBoardWriter:
    """Into a TensorBoard log folder (event files beside the trainer's, or a folder of their
    own), through tensorboard's own ``tensorboard.summary.Writer``: no torch or TensorFlow
    needed. Scalars only: the flips are in the app, W&B and MLflow."""

    name = "tensorboard"

    def __init__(self, logdir: str | Path):
        summary = _library("tensorboard.summary")
        self.logdir = Path(logdir)
        self._writer = summary.Writer(str(self.logdir))
        self._keys = CategoryKeys()
        self.target = f"tensorboard logdir {self.logdir}"

    def write(self, export: SeriesExport, steps: Collection[int] | None = None) -> list[int]:
        written = chosen_steps(export, steps)
        by_step = step_metrics(export, self._keys)
        for step in written:
            for key, value in by_step[step].items():
                self._writer.add_scalar(key, value, step)
        self._writer.flush()
        return written

    def close(self) -> None:
        self._writer.close()


# -------------------------------------------------------------------------------- choosing

OPTIONS = {
    "wandb": {"project", "entity", "run_id", "run_name", "logdir"},
    "mlflow": {"project", "run_id", "run_name", "tracking_uri"},
    "tensorboard": {"logdir"},
}
"""What each target takes: ``project`` is W&B's project and MLflow's experiment, ``logdir``
TensorBoard's folder and where W&B keeps its local files (wandb.init's ``dir``)."""


def writer_for(target: str, **options: Any) -> TrackerWriter:
    """A writer for ``target`` ("wandb", "mlflow" or "tensorboard") from the options of
    `forgetmap series export` (None: not given): W&B a new run in ``project`` (default
    "forgetmap") or ``run_id`` resumed; MLflow a new run in experiment ``project`` or the run
    ``run_id``, at ``tracking_uri`` (default: MLflow's own, $MLFLOW_TRACKING_URI); TensorBoard
    event files in ``logdir``."""
    if target not in OPTIONS:
        raise InputError(f"tracker must be one of {', '.join(TARGETS)}, got {target!r}")
    given = {k: v for k, v in options.items() if v is not None}
    wrong = sorted(set(given) - OPTIONS[target])
    if wrong:
        names = ", ".join("--" + w.replace("_", "-") for w in wrong)
        raise InputError(
            f"{names} is not an option of {target}: it takes "
            f"{', '.join('--' + o.replace('_', '-') for o in sorted(OPTIONS[target]))}"
        )
    if target == "wandb":
        return WandbWriter.open(
            given.get("project", PREFIX),
            name=given.get("run_name"),
            run_id=given.get("run_id"),
            dir=given.get("logdir"),
            entity=given.get("entity"),
        )
    if target == "mlflow":
        return MlflowWriter.open(
            given.get("project", PREFIX),
            name=given.get("run_name"),
            run_id=given.get("run_id"),
            tracking_uri=given.get("tracking_uri"),
        )
    if "logdir" not in given:
        raise InputError("tensorboard needs --logdir DIR (the folder TensorBoard reads)")
    return TensorBoardWriter(given["logdir"])
