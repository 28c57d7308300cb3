"""Bodies bounded before they are held: who may send one is checked before its first byte is
read, and its size is counted as it arrives.

FastAPI reads and parses a JSON body before a route's dependencies run, so a route's token check
alone came after the body was held (an unauthenticated 300 MB body grew the app by ~0.9 GB before
its 401). ``BodyLimits``, the outermost of the app's middleware, does both checks first:

- a write (POST, PUT, PATCH, DELETE) to an ``/api/`` route needs a valid
  ``Authorization: Bearer`` token (a worker's for the worker routes), looked up before the app is
  called: without one the answer is 401 (403 for a role the worker routes refuse) and not a byte
  of the body is read. Pages' forms log in with a session instead, which their routes check
  before they read the form (and ``/login`` is open to all): for them only the size applies.
- every body is counted as the route reads it: past its route's limit, or at the first read when
  ``Content-Length`` declares more, the answer is 413 (whatever the header said) and the read
  fails, so the JSON parser only ever sees a bounded body.

``RULES`` is the one table of route -> limit; docs/api.md ("Limits") states the same numbers.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

import anyio
from fastapi import HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from forgetmap.core.display import binary_size
from forgetmap.services.tokens import Principal
from forgetmap.web import deps
from starlette.types import ASGIApp, Message, Receive, Scope, Send

KIB = 1 << 10
MIB = 1 << 20
JSON_MAX_BYTES = 1 * MIB  # every other API body; /api/cli: 200 ASCII arguments of 4,096 fit
WORKER_UPLOAD_MAX_BYTES = 64 * MIB  # a worker's batch of results or a recoverability shard's sums
# a page's form: 500 ticked suggestions of two 200-character names each fit, with room to spare
FORM_MAX_BYTES = 256 * KIB
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

Holder = Callable[[Request], Principal]


def any_token(request: Request) -> Principal:
    """The holder of a valid token of any role (the route checks the role its body asks for);
    401 without one."""
    principal = deps.bearer_principal(request)
    if principal is None:
        raise HTTPException(
            401,
            "this endpoint needs a token: send 'Authorization: Bearer <token>' (create one with "
            "`forgetmap token create NAME`)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return principal


@dataclass(frozen=True)
class BodyRule:
    """Who may send a body to the routes whose path matches, and how large it may be."""

    route: str  # as docs/api.md names it
    path: re.Pattern[str]
    max_bytes: int | None  # None: the route streams its body to disk and bounds it itself
    holder: Holder | None  # checked before the body; None: the route's own check (a login)
    advice: str  # how to send less, for the 413's message


def _rule(
    route: str,
    pattern: str,
    max_bytes: int | None,
    holder: Holder | None,
    advice: str = "send a smaller body",
) -> BodyRule:
    path = re.compile(pattern, re.DOTALL)  # a decoded path may hold a newline
    return BodyRule(route, path, max_bytes, holder, advice)


BATCHES = "send the rows in smaller batches"
RULES: tuple[BodyRule, ...] = (
    _rule(
        "POST /api/results",
        r"/api/results",
        WORKER_UPLOAD_MAX_BYTES,
        deps.worker_principal,
        BATCHES,
    ),
    _rule(
        "POST /api/shards/{id}/recovery",
        r"/api/shards/[^/]+/recovery",
        WORKER_UPLOAD_MAX_BYTES,
        deps.worker_principal,
        BATCHES,
    ),
    _rule(
        "POST /api/shards/{id}/probe|judge",
        r"/api/shards/[^/]+/(probe|judge)",
        WORKER_UPLOAD_MAX_BYTES,
        deps.worker_principal,
    ),
    _rule("the shard protocol", r"/api/shards/.*", JSON_MAX_BYTES, deps.worker_principal),
    # streamed to the staging folder, which stops at FORGETMAP_IMPORT_MAX_BYTES (app/web/imports)
    _rule("POST /api/imports", r"/api/imports", None, any_token),
    _rule(
        "an API body",
        r"/api/.*",
        JSON_MAX_BYTES,
        any_token,
        "send a smaller body (a file to import goes to POST /api/imports)",
    ),
    _rule("the import page", r"/import", None, None),  # the same stream as /api/imports
    _rule("a page's form", r".*", FORM_MAX_BYTES, None, "send a shorter form"),
)


def rule_for(path: str) -> BodyRule:
    """The first rule whose path matches (the last matches every path)."""
    return next(rule for rule in RULES if rule.path.fullmatch(path))


def too_large_message(rule: BodyRule) -> str:
    assert rule.max_bytes is not None  # only a rule that bounds its body refuses one
    limit = f"{binary_size(rule.max_bytes)}, the limit of {rule.route}"
    return f"the request body is over {limit}; {rule.advice}"


def declared_length(scope: Scope) -> int | None:
    """The request's ``Content-Length``, or None when it has none (a chunked body) or it is not
    a number (the server refuses those itself)."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


class BodyTooLarge(Exception):
    """Raised to the app by a read past the limit, once the 413 is sent: whatever the route does
    with it (FastAPI turns it into a 400, a form read lets it out), its answer is not sent."""


def answer_too_large(scope: Scope, rule: BodyRule) -> Response:
    """The 413: the API's one error shape, or for a page's form a page of one line."""
    message = too_large_message(rule)
    if scope["path"].startswith("/api/"):
        return JSONResponse({"detail": message}, status_code=413)
    return HTMLResponse(
        f"<!doctype html><title>413 too large</title><p>{html.escape(message)}", status_code=413
    )


class BoundedBody:
    """One request's body, counted as the route reads it: the read that would take it past
    ``rule.max_bytes`` (the first read, when ``Content-Length`` already says so) answers 413 and
    raises BodyTooLarge instead of handing the chunk to the route. The answer is sent from here
    because an exception raised in ``receive`` does not reach the app's handlers intact (the
    private-mode middleware's task group wraps it)."""

    def __init__(self, scope: Scope, receive: Receive, send: Send, rule: BodyRule, limit: int):
        self.scope, self._receive, self._send, self.rule, self.limit = (
            scope,
            receive,
            send,
            rule,
            limit,
        )
        self.declared = declared_length(scope)
        self.received = 0
        self.started = False  # the app began its answer
        self.refused = False  # the 413 is sent: what the app sends after it is dropped

    async def receive(self) -> Message:
        if self.declared is not None and self.declared > self.limit:
            await self.refuse()
        message = await self._receive()
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.limit:
                await self.refuse()
        return message

    async def refuse(self) -> NoReturn:
        if not self.started and not self.refused:
            self.refused = True
            await answer_too_large(self.scope, self.rule)(self.scope, self._receive, self._send)
        raise BodyTooLarge(too_large_message(self.rule))

    async def send(self, message: Message) -> None:
        if self.refused:
            return
        self.started = True
        await self._send(message)


async def refusal(scope: Scope, rule: BodyRule) -> JSONResponse | None:
    """The answer to a write whose sender the rule refuses, or None when it may send. The token
    is looked up off the event loop (a DuckDB read), as the routes' own dependencies are."""
    if rule.holder is None or scope["method"] not in WRITE_METHODS:
        return None
    try:
        await anyio.to_thread.run_sync(rule.holder, Request(scope))
    except HTTPException as exc:
        return JSONResponse(
            {"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers
        )
    return None


class BodyLimits:
    """The ASGI middleware: authentication before the body, and the body counted as it is read
    (module docstring)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rule = rule_for(scope["path"])
        refused = await refusal(scope, rule)
        if refused is not None:  # the body stays unread: the server discards it
            await refused(scope, receive, send)
            return
        if rule.max_bytes is None:
            await self.app(scope, receive, send)
            return
        body = BoundedBody(scope, receive, send, rule, rule.max_bytes)
        try:
            await self.app(scope, body.receive, body.send)
        except Exception:
            # once the 413 is sent, what the app made of BodyTooLarge (a task group wraps it, a
            # form read lets it out) ends here, unlogged: the request was answered
            if not body.refused:
                raise
