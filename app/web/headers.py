"""Security headers on every response of the app (docs/api.md, "Security headers").

The pages run only the scripts served from ``/static`` (htmx, plotly.js and the pages' own
scripts; the data they draw is a ``<script type="application/json">`` block, which is never
run), so the policy allows no inline script and no ``eval``. Styles may be inline: plotly.js and
htmx write style elements and attributes as they draw. Nothing may frame the app (clickjacking
on its forms), and a response is never sniffed into another type. ``/docs`` is FastAPI's Swagger
UI page, which starts Swagger with one inline script: that page alone may run inline scripts.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
DOCS_PATH = "/docs"
DOCS_CONTENT_SECURITY_POLICY = CONTENT_SECURITY_POLICY.replace(
    "script-src 'self'", "script-src 'self' 'unsafe-inline'"
)
HEADERS = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
}


def security_headers(path: str) -> dict[str, str]:
    """The headers every response to ``path`` carries."""
    policy = DOCS_CONTENT_SECURITY_POLICY if path == DOCS_PATH else CONTENT_SECURITY_POLICY
    return {"content-security-policy": policy, **HEADERS}


class SecurityHeaders:
    """ASGI middleware: adds ``security_headers`` to every HTTP response (error pages, static
    files and streamed answers included), replacing any value a route set for the same names."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        added = [(k.encode(), v.encode()) for k, v in security_headers(scope["path"]).items()]
        names = {k for k, _ in added}

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                message = {**message, "headers": kept + added}
            await send(message)

        await self.app(scope, receive, send_with_headers)
