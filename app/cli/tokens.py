"""`forgetmap token create|revoke|list`: API tokens."""

from __future__ import annotations

import click
from forgetmap.cli.common import (
    CliError,
    store_of,
)
from forgetmap.core.display import utc_time
from forgetmap.core.errors import InputError


@click.group()
def token() -> None:
    """API tokens for workers and scripts (write endpoints need one)."""


@token.command("create")
@click.argument("name")
@click.option(
    "--role",
    type=click.Choice(["read", "submit", "worker", "admin"]),
    default="submit",
    show_default=True,
    help="read: reads (FORGETMAP_PRIVATE=1); submit: pairs and jobs, cancel/retry its own jobs; "
    "worker: the shard protocol and results uploads; admin: everything",
)
@click.pass_context
def token_create(ctx: click.Context, name: str, role: str) -> None:
    """Create a token and print it once (only its hash is stored)."""
    from forgetmap.services.tokens import create_token

    store = store_of(ctx)
    try:
        with store.transaction() as conn:
            secret = create_token(conn, name, role)
    except InputError as exc:
        raise CliError(str(exc)) from exc
    finally:
        store.close()
    click.echo(secret)


@token.command("revoke")
@click.argument("name")
@click.pass_context
def token_revoke(ctx: click.Context, name: str) -> None:
    """Delete a token: requests carrying it are refused from now on."""
    from forgetmap.services.tokens import revoke_token

    store = store_of(ctx)
    try:
        with store.transaction() as conn:
            revoke_token(conn, name)
    except InputError as exc:
        raise CliError(str(exc)) from exc
    finally:
        store.close()
    click.echo(f"revoked token {name}")


@token.command("list")
@click.pass_context
def token_list(ctx: click.Context) -> None:
    """Token names, roles and creation times (never the secrets)."""
    from forgetmap.services.tokens import list_tokens

    store = store_of(ctx)
    with store.read() as conn:
        for t in list_tokens(conn):
            click.echo(f"{t['name']}\t{t['role']}\t{utc_time(t['created_at'])}")
    store.close()
