"""Alembic environment. The connection is handed in by forgetmap.db.store (config.attributes)."""

from alembic import context
from alembic.ddl.impl import DefaultImpl


class AlembicDuckDBImpl(DefaultImpl):
    """Alembic has no DuckDB dialect of its own; DuckDB speaks close enough to Postgres DDL."""

    __dialect__ = "duckdb"
    transactional_ddl = True


connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=None)
with context.begin_transaction():
    context.run_migrations()
