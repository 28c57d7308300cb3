"""Files and folders private to the user who runs forgetmap (issue 50): a process that writes a
database creates everything 0600/0700 (``keep_new_files_private``), and what an older forgetmap
left readable to others loses its group and other bits when it is next used (``make_private``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_UMASK = 0o077
"""No group or other bits on what a process that owns a database creates (files 0600, folders
0700): the file, its answer files, staged uploads and backups hold results and token hashes."""


def keep_new_files_private() -> None:
    """Add ``PRIVATE_UMASK`` to the process's umask (never loosen a stricter one).

    Why the umask and not only ``chmod``: DuckDB creates files of its own with mode 0644 under the
    usual umask 022: the ``.wal``, deleted at every checkpoint and created again at the next write,
    and the ``.tmp`` spill folder, so no chmod after the fact keeps them private, while the umask
    applies at their creation. Every process that writes a database (the CLI on a file, `serve`,
    `up` and the worker it starts, `restore`, the demo) opens it through ``Store``, so this is the
    one place that cannot be forgotten, as a database server sets its own umask at start
    (PostgreSQL: 0077). What forgetmap creates itself also gets its mode at creation
    (``os.open(..., 0o600)``, ``mkdir(mode=0o700)``), private even where something loosened
    the umask again. The umask is set to the private one first and then widened to
    ``previous | PRIVATE_UMASK``: no thread ever creates a file under a looser one meanwhile."""
    previous = os.umask(PRIVATE_UMASK)
    if previous | PRIVATE_UMASK != PRIVATE_UMASK:
        os.umask(previous | PRIVATE_UMASK)


def make_private(path: Path) -> None:
    """Take the group and other bits off ``path`` if it exists and is this user's (a file or
    folder made before forgetmap set modes at creation, or copied in by hand); links are left
    alone, and a path of another user is not ours to change."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return
    mode = stat.S_IMODE(status.st_mode)
    if stat.S_ISLNK(status.st_mode) or status.st_uid != os.geteuid() or not mode & 0o077:
        return
    try:
        os.chmod(path, mode & ~0o077)
    except OSError:  # removed meanwhile, or a file system without modes
        return
