"""Every row of every table: a content fingerprint for tests of 'nothing changed'."""

from __future__ import annotations

from sqlalchemy import Connection


def table_contents(conn: Connection) -> dict[str, list[tuple]]:
    """Every row of every table, sorted."""
    names = [
        r[0]
        for r in conn.exec_driver_sql(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY 1"
        ).fetchall()
    ]
    return {
        name: sorted(conn.exec_driver_sql(f'SELECT * FROM "{name}"').fetchall(), key=repr)
        for name in names
    }
