"""What a tracker holds, read back from its own files with its own classes: a W&B offline run's
``.wandb`` file, an MLflow tracking store, a TensorBoard log folder. The tests of the tracker
writers and of the Trainer callback assert on these.

wandb 0.31 has no Python reader of its transaction log (the Go core writes and reads it), so
``wandb_records`` reads its framing, LevelDB's log format (32 KiB blocks of records, each a
7-byte header: checksum, length, type FULL/FIRST/MIDDLE/LAST) after W&B's 7-byte file header,
and parses each record with wandb's own protobuf class.
"""

from __future__ import annotations

import json
import struct
import time
import zlib
from pathlib import Path

WANDB_HEADER = struct.Struct("<4sHB")  # ":W&B", magic 0xBEE1, version 0
WANDB_IDENT, WANDB_MAGIC = b":W&B", 0xBEE1
BLOCK = 32768
RECORD_HEADER = struct.Struct("<IHB")  # crc32 of type + data, data length, type
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def wandb_run_file(run_dir: Path | str) -> Path:
    """The ``run-<id>.wandb`` file of a run folder (``offline-run-...`` or ``run-...``), or of
    the one run under a ``wandb`` folder or $WANDB_DIR."""
    run_dir = Path(run_dir)
    found = sorted(run_dir.glob("run-*.wandb")) or sorted(
        p for p in run_dir.glob("**/run-*.wandb") if p.parent.name != "latest-run"
    )
    if len(found) != 1:
        raise AssertionError(f"expected one .wandb file under {run_dir}, found {found}")
    return found[0]


def wandb_records(run_dir: Path | str, *, wait: float = 20.0) -> list:
    """Every record of a finished W&B run's transaction log, as ``wandb_internal_pb2.Record``.

    wandb's core process writes the log and may still be writing it when ``run.finish()`` has
    returned (seen on a busy machine): the file is read again until it holds the run's ``exit``
    record, for up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        records = _read_wandb_log(wandb_run_file(run_dir))
        if any(r.WhichOneof("record_type") == "exit" for r in records):
            return records
        if time.monotonic() > deadline:
            raise AssertionError(f"the W&B run under {run_dir} did not finish in {wait} s")
        time.sleep(0.1)


def _read_wandb_log(path: Path) -> list:
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    ident, magic, version = WANDB_HEADER.unpack_from(data)
    assert (ident, magic, version) == (WANDB_IDENT, WANDB_MAGIC, 0), "not a .wandb file"
    records, pending, pos = [], b"", WANDB_HEADER.size
    while pos + RECORD_HEADER.size <= len(data):
        left = BLOCK - pos % BLOCK
        if left < RECORD_HEADER.size:  # a block's trailer: no record starts there
            pos += left
            continue
        checksum, length, kind = RECORD_HEADER.unpack_from(data, pos)
        if kind == 0:  # zeros: the rest of the block is padding
            pos += left
            continue
        chunk = data[pos + RECORD_HEADER.size : pos + RECORD_HEADER.size + length]
        if len(chunk) < length or zlib.crc32(bytes([kind]) + chunk) != checksum:
            break  # a record still being written
        pos += RECORD_HEADER.size + length
        pending = chunk if kind in (FULL, FIRST) else pending + chunk
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
    return records


def wandb_history(run_dir: Path | str) -> list[dict]:
    """The run's history rows in the order logged: key -> value (JSON-decoded; ``_step`` is
    W&B's own row counter), as the W&B UI would chart them."""
    rows = []
    for record in wandb_records(run_dir):
        if record.WhichOneof("record_type") == "history":
            rows.append(
                {
                    item.key or "/".join(item.nested_key): json.loads(item.value_json)
                    for item in record.history.item
                }
            )
    return rows


def wandb_metric_axes(run_dir: Path | str) -> dict[str, str]:
    """Metric name (or glob) -> the step metric it is plotted against ("" for none), the last
    definition of each winning."""
    axes = {}
    for record in wandb_records(run_dir):
        if record.WhichOneof("record_type") == "metric":
            axes[record.metric.name or record.metric.glob_name] = record.metric.step_metric
    return axes


def mlflow_metrics(tracking_uri: str, run_id: str) -> dict[str, list[tuple[int, float]]]:
    """Every metric of an MLflow run: key -> [(step, value)] in step order."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    keys = client.get_run(run_id).data.metrics
    return {
        key: sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))
        for key in keys
    }


def tensorboard_scalars(logdir: Path | str) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of a TensorBoard log folder: tag -> [(step, value)] in step order (values
    are float32, as TensorBoard stores them)."""
    from tensorboard.backend.event_processing.event_accumulator import (
        SCALARS,
        TENSORS,
        EventAccumulator,
    )
    from tensorboard.util import tensor_util

    accumulator = EventAccumulator(str(logdir), size_guidance={SCALARS: 0, TENSORS: 0})
    accumulator.Reload()
    out = {}
    # tensorboard's own writer stores scalars as tensors (the v2 layout); torch's, as scalars
    # (a Trainer's own callback also writes text tensors, its arguments: not scalars, left out)
    for tag in accumulator.Tags()[TENSORS]:
        values = [
            (e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in accumulator.Tensors(tag)
        ]
        if all(v.ndim == 0 and v.dtype.kind == "f" for _, v in values):
            out[tag] = sorted((step, float(v)) for step, v in values)
    for tag in accumulator.Tags()[SCALARS]:
        out[tag] = sorted((e.step, e.value) for e in accumulator.Scalars(tag))
    return out
