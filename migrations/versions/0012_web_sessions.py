"""Login sessions kept by the app (``web_sessions``), so that logging out ends one.

Before this, a login was only a signed cookie: a copy taken before logout kept working until it
expired (``FORGETMAP_SESSION_DAYS``). Now the cookie carries a random session id; the app stores
its SHA-256 (``id_hash``) with the token it logged in and when it expires, and a request is logged
in only while that row exists. Logout deletes the row; revoking a token deletes its sessions.
Cookies signed before this revision carry no session id and log in no one: their users log in
again.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-08
"""

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE web_sessions (
            id_hash VARCHAR PRIMARY KEY,
            token_id INTEGER NOT NULL,
            created_at TIMESTAMP NOT NULL,
            expires_at TIMESTAMP NOT NULL
        )
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE web_sessions")
