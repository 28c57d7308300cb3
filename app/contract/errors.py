"""The one error shape of the API."""

from __future__ import annotations

from pydantic import BaseModel


class ErrorBody(BaseModel):
    """Every 4xx answer: one message saying what is wrong and how to fix it."""

    detail: str
