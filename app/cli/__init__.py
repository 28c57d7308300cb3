"""The ``forgetmap`` command line (public contract: see README.md and DESIGN.md).

One module per command group; each registers its commands on ``main`` (app.cli.base) when
imported. Heavy modules (rich, SQLAlchemy, DuckDB, pyarrow, scipy) are imported inside the
commands that use them, so that ``forgetmap --help`` and quick commands start fast.
"""

from app.cli import imports, maps, pairs, recover, run, series, tokens  # noqa: F401  (registration)
from app.cli.base import main

__all__ = ["main"]
