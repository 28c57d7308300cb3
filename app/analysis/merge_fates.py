"""The merge path's question fates, the pure part (issue 54): what mixing the base back in does to
each question a pair's post model forgot, mix by mix.

A sweep evaluates merges of a pair at mixes 0 < m < 1 (m: the post model's share); mix 0 is the
base and mix 1 the post model, whose own answers are reused. ``answers[m][q]`` says whether the
model at mix m answered question q right (one seed; a question of several seeds is read by its
majority before it gets here).

For a question the post model forgot (right at mix 0, wrong at mix 1):

- **undone at m**: right at mix m, m the largest such mix below 1: the least share of the base
  that brings the answer back (the merge nearest the post model that still knows it);
- **never undone**: wrong at every mix between.

A question right at both ends but wrong at some mix between is **newly forgotten** by the merge,
at those mixes: what averaging weights breaks that neither model broke.

Plain Python, no I/O: the app reads the answers from the store, the worker never needs this.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

FateName = Literal["undone", "never_undone", "newly_forgotten"]
FATE_NAMES: tuple[FateName, ...] = ("undone", "never_undone", "newly_forgotten")


@dataclass(frozen=True)
class Fate:
    """One question's fate along the mixes: ``undone_at`` for an undone question, ``forgotten_at``
    (the mixes in between where it is wrong) for a newly forgotten one."""

    question: str
    fate: FateName
    undone_at: float | None = None
    forgotten_at: tuple[float, ...] = ()


def _checked(answers: Mapping[float, Mapping[str, bool]]) -> list[float]:
    mixes = sorted(answers)
    if not mixes or mixes[0] != 0.0 or mixes[-1] != 1.0:
        raise ValueError("the answers need mix 0 (the base) and mix 1 (the post model)")
    if any(not 0.0 <= m <= 1.0 for m in mixes):
        raise ValueError(f"mixes are the post model's share, from 0 to 1; got {mixes}")
    questions = set(answers[0.0])
    for m in mixes:
        if set(answers[m]) != questions:
            raise ValueError(f"mix {m:g} answers other questions than the base")
    return mixes


def question_fates(answers: Mapping[float, Mapping[str, bool]]) -> list[Fate]:
    """Every question the post model forgot, and every one a merge newly forgot, with its fate
    (module docstring), in question order."""
    mixes = _checked(answers)
    between = mixes[1:-1]
    out = []
    for question in sorted(answers[0.0]):
        base, post = answers[0.0][question], answers[1.0][question]
        if base and not post:
            right = [m for m in between if answers[m][question]]
            if right:
                out.append(Fate(question, "undone", undone_at=max(right)))
            else:
                out.append(Fate(question, "never_undone"))
        elif base and post:
            wrong = tuple(m for m in between if not answers[m][question])
            if wrong:
                out.append(Fate(question, "newly_forgotten", forgotten_at=wrong))
    return out


def fate_counts(fates: list[Fate], mixes: list[float]) -> dict[str, int]:
    """How many questions each fate holds, and per mix between the ends how many forgotten
    questions are undone at it (``undone@m``) and how many are newly forgotten there
    (``newly_forgotten@m``)."""
    counts: dict[str, int] = {name: sum(f.fate == name for f in fates) for name in FATE_NAMES}
    for m in mixes:
        if 0.0 < m < 1.0:
            counts[f"undone@{m:g}"] = sum(f.undone_at == m for f in fates)
            counts[f"newly_forgotten@{m:g}"] = sum(m in f.forgotten_at for f in fates)
    return counts
