"""`forgetmap watch`: submit each checkpoint a training run writes, once it is complete.

HF Trainer and TRL save ``checkpoint-<step>`` folders under the output directory (newer versions
write ``tmp-checkpoint-<step>`` first and rename it when done). The watcher scans the directory
every few seconds and sends every complete folder to the app (``POST /api/checkpoints``),
which evaluates it once and places it in the series by step. What was submitted is recorded in the
app's database, so the watcher keeps no state: a restart submits nothing twice, and a folder whose
evaluation failed is retried by the app when the watcher sends it again.

A folder is complete when the marker file the user names exists, or else when ``config.json`` is
there and every weight file is fully written: a safetensors file's size must equal its header's
length plus its tensors' end offset (a save in progress is shorter), a sharded checkpoint's index
must name only shards that are complete, and a ``.bin`` file must keep its size over two scans.
"""

from __future__ import annotations

import json
import logging
import re
import struct
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

log = logging.getLogger("forgetmap.watch")
CHECKPOINT_DIR = re.compile(r"^checkpoint-(\d+)$")


@dataclass(frozen=True)
class Checkpoint:
    step: int
    path: Path


def safetensors_complete(path: Path) -> bool:
    """The file is as long as its header says (8-byte length, JSON header, then the tensors)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            raw = fh.read(8)
            if len(raw) < 8:
                return False
            (header_len,) = struct.unpack("<Q", raw)
            if header_len > size - 8:
                return False
            header = json.loads(fh.read(header_len))
    except (OSError, ValueError):
        return False
    ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"]
    return size == 8 + header_len + max(ends, default=0)


def step_of(folder: Path) -> int | None:
    """The step from the folder name, else from trainer_state.json's global_step."""
    match = CHECKPOINT_DIR.match(folder.name)
    if match:
        return int(match.group(1))
    try:
        return int(json.loads((folder / "trainer_state.json").read_text())["global_step"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


class Scanner:
    """Finds complete checkpoint folders; remembers .bin sizes between scans."""

    def __init__(self, root: Path, marker: str | None = None):
        self.root = root
        self.marker = marker
        self._bin_sizes: dict[Path, int] = {}

    def _weights_complete(self, folder: Path) -> bool:
        index = folder / "model.safetensors.index.json"
        if index.exists():
            try:
                shards = set(json.loads(index.read_text())["weight_map"].values())
            except (OSError, ValueError, KeyError):
                return False
            return all(safetensors_complete(folder / s) for s in shards)
        single = folder / "model.safetensors"
        if single.exists():
            return safetensors_complete(single)
        bins = sorted(folder.glob("*.bin"))
        if not bins:
            return False
        sizes = {b: b.stat().st_size for b in bins}
        stable = all(self._bin_sizes.get(b) == size for b, size in sizes.items())
        self._bin_sizes.update(sizes)
        return stable

    def complete(self, folder: Path) -> bool:
        if self.marker:
            return (folder / self.marker).exists()
        return (folder / "config.json").exists() and self._weights_complete(folder)

    def scan(self) -> list[Checkpoint]:
        """Complete checkpoint folders in step order (tmp-checkpoint-* and unfinished saves are
        skipped until they are done)."""
        found = []
        for folder in sorted(p for p in self.root.iterdir() if p.is_dir()):
            if (
                not CHECKPOINT_DIR.match(folder.name)
                and not (folder / "trainer_state.json").exists()
            ):
                continue
            if folder.name.startswith("tmp-"):
                continue
            step = step_of(folder)
            if step is not None and self.complete(folder):
                found.append(Checkpoint(step, folder.resolve()))
        return sorted(found, key=lambda c: c.step)


@dataclass(frozen=True)
class WatchSettings:
    root: Path
    series: str
    base: str
    app_url: str
    token: str
    benchmarks: list[str]
    seeds: list[int]
    config: dict
    base_path: str | None = None
    marker: str | None = None
    every: float = 60.0
    stage: str | None = None  # the run's post-training stage, its pairs'


def submit_all(
    client: httpx.Client, settings: WatchSettings, checkpoints: list[Checkpoint]
) -> list[dict]:
    """Send every complete checkpoint; the app answers what it did with each. A request that fails
    (app down, bad answer) is logged and tried again at the next scan."""
    answers = []
    for ck in checkpoints:
        body = {
            "series": settings.series,
            "base": settings.base,
            "base_path": settings.base_path,
            "folder": str(ck.path),
            "step": ck.step,
            "benchmarks": settings.benchmarks,
            "seeds": settings.seeds,
            "config": settings.config,
        }
        if settings.stage is not None:
            body["stage"] = settings.stage
        try:
            response = client.post("/api/checkpoints", json=body)
        except httpx.HTTPError as exc:
            log.warning("step %d: app unreachable (%s); will retry", ck.step, exc)
            continue
        if response.status_code != 200:
            log.warning("step %d: %s %s; will retry", ck.step, response.status_code, response.text)
            continue
        answer = response.json()
        if answer["status"] == "submitted":
            log.info("submitted %s (step %d) as job %d", ck.path, ck.step, answer["job_id"])
        elif answer["status"] == "retried":
            log.info(
                "retried step %d: job %d, attempt %d", ck.step, answer["job_id"], answer["attempt"]
            )
        answers.append(answer)
    return answers


def watch(settings: WatchSettings, *, once: bool = False) -> None:
    scanner = Scanner(settings.root, settings.marker)
    headers = {"Authorization": f"Bearer {settings.token}"}
    given_up: set[int] = set()
    log.info("watching %s for series %s every %gs", settings.root, settings.series, settings.every)
    with httpx.Client(base_url=settings.app_url, headers=headers, timeout=60) as client:
        while True:
            for answer in submit_all(client, settings, scanner.scan()):
                if answer["status"] == "gave_up" and answer["step"] not in given_up:
                    given_up.add(answer["step"])
                    log.error(
                        "step %d: evaluation failed too often; see job %d",
                        answer["step"],
                        answer["job_id"],
                    )
            if once:
                return
            time.sleep(settings.every)
