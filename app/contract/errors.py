"""The one error shape of the API."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class ErrorBody(BaseModel):
    """Every 4xx answer: one message saying what is wrong and how to fix it."""

    detail: str


def reply_detail(reply: Any) -> str | None:
    """The one-line message of an error reply in this shape (an HTTP response with ``.json()``),
    or None when its body is not one (a proxy's page, an empty body); the callers say what
    stands in for it."""
    try:
        detail = reply.json().get("detail")
    except (ValueError, AttributeError):  # not JSON, or JSON but not an object
        return None
    return str(detail) if detail else None
