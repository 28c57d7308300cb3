"""Token roles, job owners, and how often a queued shard was sent again.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30

Existing tokens could do everything before roles existed. They keep working: each becomes an
``admin`` token, except the one ``forgetmap up`` makes for its local worker (``local-worker``),
which becomes a ``worker`` token. README ("Tokens and roles") says so; review them with
``forgetmap token list`` and replace broad ones with narrower roles.
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE api_tokens ADD COLUMN role VARCHAR DEFAULT 'submit'")
    op.execute("UPDATE api_tokens SET role = 'admin'")
    op.execute("UPDATE api_tokens SET role = 'worker' WHERE name = 'local-worker'")
    # the token name that submitted a job (NULL for jobs older than roles: only admins manage them)
    op.execute("ALTER TABLE jobs ADD COLUMN owner VARCHAR")
    # times a queued shard was sent again because no worker had started it (a lost broker message)
    op.execute("ALTER TABLE shards ADD COLUMN resends INTEGER DEFAULT 0")
    op.execute("UPDATE shards SET resends = 0")
    # the broker message (Celery task id) whose delivery claimed a running shard
    op.execute("ALTER TABLE shards ADD COLUMN delivery VARCHAR")


def downgrade() -> None:
    op.execute("ALTER TABLE shards DROP COLUMN delivery")
    op.execute("ALTER TABLE shards DROP COLUMN resends")
    op.execute("ALTER TABLE jobs DROP COLUMN owner")
    op.execute("ALTER TABLE api_tokens DROP COLUMN role")
