"""What every typed body is made of: strict models, the integer and choice field types, and
the one way a validation failure is told (an InputError naming every problem).

Bodies are strict (a string is not an integer, unknown fields are refused) so that what the
OpenAPI document says is valid is exactly what the app accepts; a choice (engine, mode, ...) is
given by its value. The form validates the same models leniently (every form value is text).
Bodies are frozen: a job, a checkpoint or an upload is a value, built once and passed on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Annotated, Any, TypeVar

from forgetmap.core.errors import InputError
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

M = TypeVar("M", bound=BaseModel)


def integral(value: Any) -> Any:
    """JSON has one number type: 3.0 is the integer 3 (as JSON Schema says); 3.5 stays invalid."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


# an integer in a strict body: no strings, no booleans, integral floats allowed
Int = Annotated[int, BeforeValidator(integral)]
Name = Annotated[str, Field(min_length=1, max_length=200)]


E = TypeVar("E", bound=StrEnum)
Choice = Annotated[E, Field(strict=False)]
"""A field holding one of an enum's values (JSON has no enums: the value is the text):
``prompting: Choice[Prompting]``."""


def choice(enum: type[StrEnum]) -> Any:
    """A field holding one of ``enum``'s values (JSON has no enums: the value is the text), for
    code that picks the enum at run time; annotations write ``Choice[enum]``."""
    return Annotated[enum, Field(strict=False)]


class Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


def problems(exc: ValidationError) -> list[tuple[tuple[Any, ...], str]]:
    """(location, message) of each problem, e.g. ``(("config", "temperature"), "Input should be
    less than or equal to 2")``."""
    return [(tuple(e.get("loc", ())), e.get("msg", "invalid")) for e in exc.errors()]


def problem_text(exc: ValidationError, limit: int = 10) -> str:
    """One line for all problems: ``config.temperature: Input should be ...; ...``."""
    parts = [
        f"{'.'.join(map(str, loc))}: {msg}" if loc else msg for loc, msg in problems(exc)[:limit]
    ]
    return "; ".join(parts) or "invalid"


def request_problem_text(
    errors: Sequence[Mapping[str, Any]], where: tuple[Any, ...] = (), limit: int = 10
) -> str:
    """The app's one line for an invalid request (its 422 ``detail``): each problem located by
    its path, blank-separated, under ``where`` (e.g. ``body evaluate config temperature: Input
    should be ...``). The CLI checks a body before sending it with the same words."""
    parts = [
        f"{' '.join(map(str, (*where, *e.get('loc', ()))))}: {e.get('msg', 'invalid')}"
        for e in errors[:limit]
    ]
    return "; ".join(parts) or "invalid request"


def validated(model: type[M], data: Any, *, strict: bool | None = None) -> M:
    """``model`` validated from ``data``; an InputError naming every problem otherwise."""
    try:
        return model.model_validate(data, strict=strict)
    except ValidationError as exc:
        raise InputError(problem_text(exc)) from None
