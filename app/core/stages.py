"""The post-training stages a pair can measure: one list for every entry point that stores a stage
(the API's and the form's job and pair bodies through forgetmap.contract, `forgetmap pair add` and
`forgetmap job submit`), so a stage one of them refuses none of them stores.

A leaf module (the standard library only): the CLI checks ``--stage`` with it without loading
pydantic (forgetmap.contract costs a command 0.2 s to import).
"""

from __future__ import annotations

from enum import StrEnum

from forgetmap.core.errors import InputError


class Stage(StrEnum):
    """What post-training step a pair measures."""

    instruct = "instruct"
    sft = "sft"
    rl = "rl"
    domain_cpt = "domain-cpt"
    merge = "merge"
    other = "other"


STAGE_NAMES = tuple(s.value for s in Stage)


def parse_stage(text: str, where: str = "stage") -> Stage:
    """``text`` as a Stage; an InputError naming the allowed values otherwise."""
    try:
        return Stage(text)
    except ValueError:
        shown = text if len(text) <= 50 else text[:50] + "..."
        raise InputError(
            f"{where} must be one of {', '.join(STAGE_NAMES)}; got {shown!r}"
        ) from None
