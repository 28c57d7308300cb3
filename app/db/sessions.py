"""Login sessions: every read and write of ``web_sessions`` (app/services/tokens.py makes the ids
and decides when a session ends; migration 0012 says why the table exists)."""

from __future__ import annotations

from datetime import datetime

from forgetmap.db.store import Connection


def insert_session(
    conn: Connection, id_hash: str, token_id: int, created_at: datetime, expires_at: datetime
) -> None:
    conn.execute(
        "INSERT INTO web_sessions (id_hash, token_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
        [id_hash, token_id, created_at, expires_at],
    )


def session_token(conn: Connection, id_hash: str, now: datetime) -> tuple[int, str, str] | None:
    """(id, name, role) of the token a live session logged in, or None (ended, expired, or its
    token revoked)."""
    return conn.execute(
        "SELECT t.id, t.name, t.role FROM web_sessions s JOIN api_tokens t ON t.id = s.token_id "
        "WHERE s.id_hash = ? AND s.expires_at > ?",
        [id_hash, now],
    ).fetchone()


def delete_session(conn: Connection, id_hash: str) -> None:
    conn.execute("DELETE FROM web_sessions WHERE id_hash = ?", [id_hash])


def delete_token_sessions(conn: Connection, token_id: int) -> int:
    """End every session of one token; how many there were."""
    ended = conn.execute(
        "DELETE FROM web_sessions WHERE token_id = ? RETURNING id_hash", [token_id]
    ).fetchall()
    return len(ended)


def delete_stale_sessions(conn: Connection, token_id: int, now: datetime, keep: int) -> None:
    """Forget expired sessions (of every token), and all but the newest ``keep`` of one token."""
    conn.execute("DELETE FROM web_sessions WHERE expires_at <= ?", [now])
    conn.execute(
        "DELETE FROM web_sessions WHERE token_id = ? AND id_hash NOT IN (SELECT id_hash FROM "
        "web_sessions WHERE token_id = ? ORDER BY created_at DESC, id_hash LIMIT ?)",
        [token_id, token_id, keep],
    )
