"""The broker both sides share: where shard messages go and the task they name. A leaf module:
the worker imports it without importing anything that opens the database."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TASK_NAME = "forgetmap.evaluate_shard"


@dataclass(frozen=True)
class BrokerSettings:
    url: str | None = None  # None: embedded filesystem transport
    data_dir: Path = Path("data")
    queue: str = "forgetmap"
    visibility_timeout: int = 3600  # seconds before Redis re-delivers an unacknowledged task

    @classmethod
    def from_env(cls, data_dir: Path | None = None) -> BrokerSettings:
        return cls(
            url=os.environ.get("FORGETMAP_BROKER_URL") or None,
            data_dir=Path(os.environ.get("FORGETMAP_DATA_DIR") or data_dir or "data"),
            queue=os.environ.get("FORGETMAP_QUEUE", "forgetmap"),
            visibility_timeout=int(os.environ.get("FORGETMAP_VISIBILITY_TIMEOUT", "3600")),
        )

    def celery_config(self) -> dict:
        if self.url:
            broker = self.url
            options = {"visibility_timeout": self.visibility_timeout}
        else:
            folder = (self.data_dir / "broker").resolve()
            for sub in ("queue", "processed", "control"):
                (folder / sub).mkdir(parents=True, exist_ok=True)
            broker = "filesystem://"
            options = {
                "data_folder_in": str(folder / "queue"),
                "data_folder_out": str(folder / "queue"),
                "processed_folder": str(folder / "processed"),
                "control_folder": str(folder / "control"),
                "store_processed": False,
            }
        return {
            "broker_url": broker,
            "broker_transport_options": options,
            "broker_connection_retry_on_startup": True,
            "task_default_queue": self.queue,
            "task_acks_late": True,
            "task_reject_on_worker_lost": True,
            "worker_prefetch_multiplier": 1,
            "task_ignore_result": True,
            "broker_connection_timeout": 3,
        }
