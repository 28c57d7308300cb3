"""Where the paper's benchmarks live on the Hugging Face hub, and reading one split of them.

Every load goes through ``datasets.load_dataset`` (imported lazily: only hub benchmarks need it).

Script-based datasets (``lighteval/big_bench_hard``, ``ybisk/piqa``, ``sagnikrayc/mctest``, ...):
``datasets >= 4`` refuses dataset scripts (earlier versions want ``trust_remote_code``, which we
never set). The hub keeps an automatic Parquet export of every public dataset on the branch
``refs/convert/parquet``, laid out as ``<config>/<split>/0000.parquet`` with no README. Loaded as
a repository, that branch has a single ``default`` config that would merge every folder; so the
fallback names the config's folder (``data_dir``) and the split's files (``data_files``), which
loads exactly one config's split.

A *hub folder* (``hub_dir``) is a local copy of those exports, one folder per repository:
``<hub_dir>/<owner>/<name>/<config>/<split>/0000.parquet`` (what ``huggingface-cli download
--repo-type dataset --revision refs/convert/parquet <repo> --local-dir <hub_dir>/<repo>`` writes).
It is read the same way, without any network.

Gated datasets (``Idavidrein/gpqa``): ``HF_TOKEN`` from the environment is passed to the hub; it
must belong to an account that accepted the dataset's terms.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forgetmap.worker.benchmarks.items import BenchmarkError

__all__ = [
    "OFFLINE_FIX",
    "PARQUET_REVISION",
    "HubSource",
    "hub_revision",
    "load_hub_rows",
]

PARQUET_REVISION = "refs/convert/parquet"

OFFLINE_FIX = (
    "if this machine cannot reach the Hugging Face hub, run `forgetmap suite fetch --out DIR` "
    "where it can, copy DIR here and list it in FORGETMAP_BENCHMARK_DIRS"
)
"""The fix for a benchmark that is neither copied locally nor reachable (shown in shard errors)."""

Row = Mapping[str, Any]


@dataclass(frozen=True)
class HubSource:
    """One split of a dataset on the hub."""

    repo: str
    config: str | None
    split: str
    parquet_config: str | None = None
    """The config's folder in the Parquet export, where it is not ``config`` (``default``,
    ``plain_text``)."""
    gated: bool = False

    @property
    def export_folder(self) -> str:
        """The config's folder on the ``refs/convert/parquet`` branch."""
        return self.parquet_config or self.config or "default"

    def __str__(self) -> str:
        config = f"/{self.config}" if self.config else ""
        return f"{self.repo}{config} [{self.split}]"


def _token() -> str | None:
    return os.environ.get("HF_TOKEN") or None


def _is_script_refusal(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(
        s in text
        for s in ("dataset scripts are no longer supported", "trust_remote_code", "custom code")
    )


def _is_gated_refusal(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return any(s in text for s in ("gated", "401", "403", "unauthorized", "authenticat"))


def _gated_message(source: HubSource, exc: BaseException) -> str:
    token = (
        "HF_TOKEN is set, but its account has not accepted the terms"
        if _token()
        else "HF_TOKEN is not set"
    )
    return (
        f"cannot load {source}: the dataset is gated ({token}). Accept its terms at "
        f"https://huggingface.co/datasets/{source.repo} while logged in, then export HF_TOKEN=<a "
        f"read token of that account> where you run `forgetmap suite fetch` or the worker "
        f"({type(exc).__name__}: {exc})"
    )


def _datasets():
    try:
        import datasets
    except ImportError as exc:
        raise BenchmarkError(
            "loading a benchmark from the Hugging Face hub needs the 'datasets' package, which is "
            "not installed: pip install 'forgetmap[suite]' (or use local copies: "
            f"{OFFLINE_FIX})"
        ) from exc
    return datasets


def _load_export(root: str, source: HubSource, revision: str | None) -> Iterable[Row]:
    """One config's split of a Parquet export (``root``: a hub repo id or a local folder)."""
    kwargs: dict[str, Any] = {"token": _token()}
    if revision is not None:
        kwargs["revision"] = revision
    return _datasets().load_dataset(
        root,
        data_dir=source.export_folder,
        data_files={source.split: f"{source.split}/*.parquet"},
        split=source.split,
        **kwargs,
    )


def load_hub_rows(source: HubSource, *, hub_dir: str | Path | None = None) -> Iterable[Row]:
    """The rows of one split, via ``datasets`` (the hub, its local cache, or ``hub_dir``).

    Never runs dataset scripts: a script-based dataset is read from the hub's Parquet export.
    Raises ``BenchmarkError`` with the fix (gated: the token; unreachable: ``suite fetch``).
    """
    if hub_dir is not None:
        folder = Path(hub_dir).expanduser() / source.repo
        if not (folder / source.export_folder / source.split).is_dir():
            raise BenchmarkError(
                f"cannot load {source}: {folder / source.export_folder / source.split} does not "
                f"exist (a hub folder holds <owner>/<name>/<config>/<split>/*.parquet)"
            )
        try:
            return _load_export(str(folder), source, None)
        except Exception as exc:  # datasets raises many types
            raise BenchmarkError(f"cannot load {source} from {folder}: {exc}") from exc
    datasets = _datasets()
    try:
        return datasets.load_dataset(source.repo, source.config, split=source.split, token=_token())
    except Exception as exc:  # datasets raises many types (FileNotFound, ValueError, HTTP errors)
        if source.gated and _is_gated_refusal(exc):
            raise BenchmarkError(_gated_message(source, exc)) from exc
        if not _is_script_refusal(exc):
            raise BenchmarkError(
                f"cannot load {source} from the Hugging Face hub ({type(exc).__name__}: {exc}); "
                f"{OFFLINE_FIX}"
            ) from exc
        first = exc
    try:
        return _load_export(source.repo, source, PARQUET_REVISION)
    except Exception as exc:
        raise BenchmarkError(
            f"cannot load {source}: it is script-based ({first}) and its Parquet export "
            f"({PARQUET_REVISION}, folder {source.export_folder!r}) failed too "
            f"({type(exc).__name__}: {exc}); {OFFLINE_FIX}"
        ) from exc


def hub_revision(source: HubSource) -> str | None:
    """The commit the hub serves for ``source`` now (main, or the Parquet export of a
    script-based dataset), or None when it cannot be asked (offline, no ``huggingface_hub``)."""
    try:
        from huggingface_hub import HfApi
    except ImportError:
        return None
    api = HfApi(token=_token())
    try:
        info = api.dataset_info(source.repo)
        names = {s.rfilename for s in (info.siblings or [])}
        if any(n.endswith(".py") and "/" not in n for n in names):  # script-based: the export
            info = api.dataset_info(source.repo, revision=PARQUET_REVISION)
    except Exception:  # noqa: BLE001 - offline or refused: the revision is simply unknown
        return None
    return info.sha
