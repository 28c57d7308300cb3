"""``JobIn``, the body of ``POST /api/jobs``: it unites a kind from ``jobs`` with one from
``recovery``, which itself builds on ``jobs``."""

from __future__ import annotations

from typing import Annotated, Any

from forgetmap.contract.jobs import EvaluateJobIn, SeriesJobIn
from forgetmap.contract.judge import JudgeJobIn
from forgetmap.contract.merge import MergeJobIn, SoupJobIn
from forgetmap.contract.probe import ProbeJobIn
from forgetmap.contract.recovery import RecoverJobIn
from pydantic import Discriminator, Tag

KINDS = ("evaluate", "recover", "series", "probe", "judge", "merge", "soup")


def _job_kind(value: Any) -> str:
    kind = (
        value.get("kind", "evaluate") if isinstance(value, dict) else getattr(value, "kind", None)
    )
    return kind if kind in KINDS else "evaluate"


JobIn = Annotated[
    Annotated[EvaluateJobIn, Tag("evaluate")]
    | Annotated[RecoverJobIn, Tag("recover")]
    | Annotated[SeriesJobIn, Tag("series")]
    | Annotated[ProbeJobIn, Tag("probe")]
    | Annotated[JudgeJobIn, Tag("judge")]
    | Annotated[MergeJobIn, Tag("merge")]
    | Annotated[SoupJobIn, Tag("soup")],
    Discriminator(_job_kind),
]
"""An evaluation, a recoverability analysis (``"kind": "recover"``), a training run
(``"kind": "series"``), a probe of a pair's flips (``"kind": "probe"``), a judge of its unread
answers (``"kind": "judge"``), a sweep of merges of a pair (``"kind": "merge"``) or soups of a
training run's last checkpoints (``"kind": "soup"``); no kind means an evaluation."""
