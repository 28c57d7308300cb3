"""A dataset's files from the Hugging Face hub, through huggingface_hub's ``snapshot_download``.

huggingface_hub is optional (``pip install huggingface_hub``) and imported only here, when an
import from the hub runs. It does what an operator expects of it with no setting of ours: the
token (``HF_TOKEN`` or ``hf auth login``), a mirror (``HF_ENDPOINT``), the shared cache
(``HF_HOME``, ``HF_HUB_CACHE``; files fetched once are not fetched again) and offline use
(``HF_HUB_OFFLINE=1``: the cached snapshot of the revision, no request). Its errors become one
line that says what to do.
"""

from __future__ import annotations

import logging
from pathlib import Path

from forgetmap.core.errors import InputError

INSTALL = "pip install huggingface_hub"


class _Unmatched(logging.Filter):
    """Drops huggingface_hub's warning that no file of the dataset matched the patterns: asking
    for results files that a dataset may not have is how its layout is told, and the import says
    itself what a dataset lacks."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("No files matched")


def download(repo_id: str, *, revision: str | None, patterns: list[str]) -> Path:
    """The snapshot folder of dataset ``repo_id`` at ``revision`` (default: main) holding the
    files that match ``patterns`` (fetched unless cached). Offline, the cached snapshot."""
    try:
        from huggingface_hub import constants, errors, snapshot_download
    except ImportError:
        raise InputError(
            f"importing from the Hugging Face hub needs huggingface_hub: {INSTALL}"
        ) from None
    said = logging.getLogger(snapshot_download.__module__)
    unmatched = _Unmatched()
    said.addFilter(unmatched)
    try:
        folder = snapshot_download(
            repo_id, repo_type="dataset", revision=revision, allow_patterns=patterns
        )
    except errors.HFValidationError as exc:
        raise InputError(
            f"{repo_id!r} is not a dataset id (ORG/NAME): {_first_line(exc)}"
        ) from None
    except errors.RevisionNotFoundError:
        raise InputError(f"dataset {repo_id} has no revision {revision!r} on the hub") from None
    except errors.RepositoryNotFoundError:  # gated ones too: the hub answers alike
        raise InputError(
            f"no dataset {repo_id} on the hub (a private or gated one needs a token with access: "
            "HF_TOKEN, or `hf auth login`)"
        ) from None
    except errors.IncompleteSnapshotError as exc:
        raise InputError(_first_line(exc)) from None
    except errors.LocalEntryNotFoundError:
        where = "HF_HUB_OFFLINE is set" if constants.is_offline_mode() else "no connection"
        raise InputError(
            f"dataset {repo_id} (revision {revision or 'main'}) is not in the Hugging Face cache "
            f"({constants.HF_HUB_CACHE}) and the hub cannot be reached ({where}): run the "
            "import once where it can, or point HF_HUB_CACHE at a cache that holds it"
        ) from None
    except errors.HfHubHTTPError as exc:
        raise InputError(f"the hub refused dataset {repo_id}: {_first_line(exc)}") from None
    finally:
        said.removeFilter(unmatched)
    return Path(folder)


def cached_listing(repo_id: str, commit: str) -> list[str] | None:
    """The paths of dataset ``repo_id``'s files at ``commit``, sorted, from huggingface_hub's
    cached listing of the commit (``snapshot_download`` writes it when it reaches the hub; no
    request); None where none is cached, or this huggingface_hub keeps none."""
    try:
        from huggingface_hub import get_cached_repo_tree
        from huggingface_hub.errors import CachedRepoTreeNotFoundError
    except ImportError:
        return None
    try:
        tree = get_cached_repo_tree(repo_id, repo_type="dataset", revision=commit)
    except (CachedRepoTreeNotFoundError, OSError, ValueError):
        return None
    return sorted(entry.path for entry in tree)


def listed_files(repo_id: str, snapshot: Path) -> list[str]:
    """The paths of the dataset's files at the snapshot's commit, sorted: its cached listing,
    else the files the cached snapshot holds (what was fetched)."""
    listing = cached_listing(repo_id, snapshot.name)
    if listing is not None:
        return listing
    return sorted(
        path.relative_to(snapshot).as_posix() for path in snapshot.rglob("*") if path.is_file()
    )


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
