"""The broker both sides share: where shard messages go and the task they name. A leaf module:
the worker imports it without importing anything that opens the database."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from forgetmap.runtime.config import ENVIRONMENT, read_settings, shown
from forgetmap.runtime.paths import default_db_path
from forgetmap.runtime.private import make_private
from pydantic import Field
from pydantic_settings import BaseSettings

TASK_NAME = "forgetmap.evaluate_shard"


class BrokerSettings(BaseSettings):
    """FORGETMAP_BROKER_URL, FORGETMAP_DATA_DIR, FORGETMAP_QUEUE, FORGETMAP_VISIBILITY_TIMEOUT."""

    model_config = ENVIRONMENT

    url: str | None = Field(
        None,
        validation_alias="FORGETMAP_BROKER_URL",
        description="e.g. `redis://host:6379/0`, or `rediss://` across networks (see "
        "[Adding worker nodes](jobs.md#adding-worker-nodes))",
        json_schema_extra=shown("none: the embedded filesystem queue"),
    )
    data_dir: Path = Field(
        default_factory=lambda: default_db_path().parent,
        description="the embedded queue lives in `<data dir>/broker`: a worker started with the "
        "app's `--db` finds the app's queue",
        json_schema_extra=shown(
            "the database's folder (`--db`, else `$FORGETMAP_DB`'s, else `data`), for `serve`, "
            "`up` and `worker` alike"
        ),
    )
    queue: str = Field("forgetmap", description="the Celery queue's name")
    visibility_timeout: int = Field(
        3600,
        gt=0,
        description="seconds before Redis re-delivers the task of a dead worker; set it above "
        "your longest shard",
    )

    @classmethod
    def from_env(
        cls, data_dir: Path | None = None, environ: Mapping[str, str] | None = None
    ) -> BrokerSettings:
        """The environment's broker (or ``environ``'s: ``read_settings``); ``data_dir`` unless
        FORGETMAP_DATA_DIR names another."""
        settings = read_settings(cls, environ)
        if data_dir is not None and "data_dir" not in settings.model_fields_set:
            settings = settings.model_copy(update={"data_dir": Path(data_dir)})
        return settings

    def celery_config(self) -> dict:
        if self.url:
            broker = self.url
            options: dict[str, Any] = {"visibility_timeout": self.visibility_timeout}
        else:
            folder = (self.data_dir / "broker").resolve()
            # private (0700, also when an older forgetmap made it): the messages name models
            for sub in (folder, folder / "queue", folder / "processed", folder / "control"):
                sub.mkdir(mode=0o700, parents=True, exist_ok=True)
                make_private(sub)
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
