"""Merging the base back in (issue 54) on both ends: the sweep a submitter asks for (a stored
pair, a method, the mixes) and the spec of the shard that builds one merged checkpoint and then
runs its evaluations. The merge itself is ``forgetmap.worker.merge``.

A mix is the post model's share, from 0 (the base) to 1 (the post model), in thousandths: a
sweep is stored as a series whose axis is the mix (``step`` = the mix in thousandths).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from forgetmap.contract.base import Name, Strict
from forgetmap.contract.jobs import (
    Benchmarks,
    EvalConfigIn,
    ModelIn,
    Seeds,
)
from forgetmap.contract.shards import ShardModel
from forgetmap.core.errors import InputError
from pydantic import BaseModel, ConfigDict, Field

MIX_STEPS = 1000
"""A mix is stored in thousandths (the step of its series): 0.25 is step 250."""
DEFAULT_MIXES = (0.0, 0.25, 0.5, 0.75, 1.0)
MERGE_FOLDER = "forgetmap-merges"
"""Where a worker builds merged checkpoints, under its first model root unless
``FORGETMAP_MERGE_DIR`` says otherwise."""

MergeMethodName = Literal["linear", "slerp", "ties", "dare_ties"]
DENSITY_METHODS = ("ties", "dare_ties")
"""Methods that keep a share (``density``) of the post model's task vector."""
Mix = Annotated[float, Field(ge=0, le=1)]


def mix_step(mix: float) -> int:
    """The series step of a mix (thousandths)."""
    return round(mix * MIX_STEPS)


def mix_label(mix: float) -> str:
    return f"{mix:g}"


def folder_name(model: str) -> str:
    """A merged model's folder: its name with anything but letters, digits, ``.``, ``_`` and
    ``-`` replaced (a name never becomes a path that climbs out)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip(".-") or "merge"


class MergeJobIn(Strict):
    """A sweep of a stored pair: for each mix strictly between 0 and 1 a merged checkpoint built
    by a worker, evaluated on ``benchmarks`` x ``seeds`` under ``config`` and removed afterwards
    unless ``keep`` (``density``: the share of the task vector TIES and DARE keep); mix 0 and 1
    are the pair's own models (their stored evaluations serve).
    Without ``benchmarks``, ``seeds`` and ``config`` the merges are evaluated as the workers
    evaluated the post model (each eval config with its benchmarks and seeds); with some, once,
    the rest from the post model's newest evaluation. The sweep is stored as series ``series``
    (default: "POST merged back (METHOD)") with the mix as its axis."""

    kind: Literal["merge"]
    base: ModelIn
    post: ModelIn
    method: MergeMethodName = "linear"
    density: Annotated[float, Field(gt=0, le=1)] = 0.5
    mixes: Annotated[list[Mix], Field(min_length=1, max_length=21)] = list(DEFAULT_MIXES)
    benchmarks: Benchmarks | None = None
    seeds: Seeds | None = None
    config: EvalConfigIn | None = None
    series: Name | None = None
    keep: bool = False

    def check(self) -> MergeJobIn:
        if self.base.name == self.post.name:
            raise InputError("the base and the post-trained model need different names")
        steps = [mix_step(m) for m in self.mixes]
        if any(abs(s / MIX_STEPS - m) > 1e-9 for s, m in zip(steps, self.mixes, strict=True)):
            raise InputError("a mix is given in thousandths at most, e.g. 0.25 or 0.125")
        if len(set(steps)) != len(steps):
            raise InputError("each mix is given once")
        return self

    def series_name(self) -> str:
        return self.series or f"{self.post.name} merged back ({self.method})"

    def merged_name(self, mix: float) -> str:
        """The merged model's name: its pair, method and mix (and TIES's or DARE's density)."""
        density = f"-d{self.density:g}" if self.method in DENSITY_METHODS else ""
        return f"{self.base.name}+{self.post.name}@{self.method}-{mix_label(mix)}{density}"

    def inner_mixes(self) -> list[float]:
        """The mixes a worker builds (0 and 1 are the pair's own models), in order."""
        return sorted(m for m in self.mixes if 0 < m < 1)


DEFAULT_SOUPS = (2, 4, 8)
"""How many of a run's last checkpoints each soup averages (those longer than the run are left
out when the sizes are not given)."""
MAX_SOUP = 64


class SoupJobIn(Strict):
    """Soups along a stored training run: for each size N the uniform average of the run's last N
    checkpoints, built by a worker, evaluated like a merge of a sweep and removed unless
    ``keep``. ``benchmarks``, ``seeds`` and ``config`` default as a sweep's, from the run's last
    checkpoint. The soups are stored as series ``RUN soups`` whose axis is
    the soup's size (1 is the last checkpoint itself)."""

    kind: Literal["soup"]
    series: Name
    sizes: Annotated[list[Annotated[int, Field(ge=2, le=MAX_SOUP)]], Field(min_length=1)] | None = (
        None
    )
    benchmarks: Benchmarks | None = None
    seeds: Seeds | None = None
    config: EvalConfigIn | None = None
    keep: bool = False

    def soup_series(self) -> str:
        return f"{self.series} soups"

    def soup_name(self, size: int) -> str:
        return f"{self.series}@soup-{size}"


class MergeShardSpec(BaseModel):
    """What a merge shard tells its worker (``shards.spec``): what to merge (a pair's ``base``
    and ``post`` at ``mix`` by ``method``, or with ``method`` ``soup`` the uniform average of
    ``checkpoints``), the merged model (its folder under the worker's merge folder), whether to
    keep it, and the evaluation shards to run on it once built. Unknown keys are ignored."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)
    base: ShardModel | None = None
    post: ShardModel | None = None
    method: Literal["linear", "slerp", "ties", "dare_ties", "soup"]
    mix: float = 1.0
    density: float = 1.0
    checkpoints: list[ShardModel] = []
    model: Name
    folder: Name
    keep: bool = False
    evaluations: list[int] = []

    def recipe(self) -> dict[str, Any]:
        """What decides the merged weights (its hash keys the shard)."""
        if self.method == "soup":
            return self.model_dump(mode="json", include={"method", "checkpoints"})
        keys = {"base", "post", "method", "mix"}
        return self.model_dump(
            mode="json", include=keys | ({"density"} if self.method in DENSITY_METHODS else set())
        )
