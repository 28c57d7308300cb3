"""API tokens: every read and write of ``api_tokens`` (app/services/tokens.py holds roles and
hashing)."""

from __future__ import annotations

from typing import Any

from forgetmap.db.store import Connection, one_row


def token_exists(conn: Connection, name: str) -> bool:
    row = conn.execute("SELECT count(*) FROM api_tokens WHERE name = ?", [name]).fetchone()
    return bool(one_row(row)[0])


def insert_token(conn: Connection, name: str, token_hash: str, role: str) -> None:
    conn.execute(
        "INSERT INTO api_tokens (name, token_hash, role) VALUES (?, ?, ?)", [name, token_hash, role]
    )


def delete_token(conn: Connection, name: str) -> None:
    """Delete a token and its login sessions."""
    conn.execute(
        "DELETE FROM web_sessions WHERE token_id IN (SELECT id FROM api_tokens WHERE name = ?)",
        [name],
    )
    conn.execute("DELETE FROM api_tokens WHERE name = ?", [name])


def token_by_hash(conn: Connection, token_hash: str) -> tuple[int, str, str] | None:
    """(id, name, role) of the token with this hash, or None."""
    return conn.execute(
        "SELECT id, name, role FROM api_tokens WHERE token_hash = ?", [token_hash]
    ).fetchone()


def tokens(conn: Connection) -> list[tuple[Any, ...]]:
    """(name, role, created_at) of every token, by name."""
    return conn.execute("SELECT name, role, created_at FROM api_tokens ORDER BY name").fetchall()
