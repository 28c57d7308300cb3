"""Every row of every table: a content fingerprint for tests of 'nothing changed'."""

from __future__ import annotations

from forgetmap.db.store import Connection


def table_contents(conn: Connection) -> dict[str, list[tuple]]:
    """Every row of every table, sorted."""
    names = [
        r[0]
        for r in conn.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'main' ORDER BY 1"
        ).fetchall()
    ]
    return {
        name: sorted(conn.execute(f'SELECT * FROM "{name}"').fetchall(), key=repr) for name in names
    }
