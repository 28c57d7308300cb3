"""A recoverability analysis on both ends: the job a submitter asks for (a pair, a text corpus and
the analysis' settings), the spec its shard carries to the worker, and what the worker uploads
when its shard is done."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from forgetmap.contract.base import Int, Name, Strict
from forgetmap.contract.jobs import ModelIn
from forgetmap.contract.limits import MAX_ID
from forgetmap.contract.shards import ShardModel
from forgetmap.core.errors import InputError
from forgetmap.core.recoverability_names import CONTROLS, DEFAULT_K, DEFAULT_MAX_TOKENS
from pydantic import BaseModel, ConfigDict, Field

MAX_TABLE_DOCS = 200_000
_HF_DATASET = re.compile(r"^hf:[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
_LOCAL = re.compile(r"^local:[\w.-]+$")


class CorpusIn(Strict):
    """Where the documents come from.

    ``source``: ``local:NAME`` (a .txt / .jsonl file, or a folder of them, directly inside one of
    the corpus folders, FORGETMAP_CORPUS_DIRS) or ``hf:ORG/NAME`` (a Hugging Face dataset, loaded
    with ``datasets.load_dataset(NAME, config, split=split)``). ``text_field`` names the text
    column of JSONL rows and datasets; ``separator`` splits a .txt file into documents (default:
    one document per file); ``max_docs`` keeps the first documents (None: all).
    """

    source: Annotated[str, Field(min_length=1, max_length=500)]
    text_field: Name = "text"
    separator: Annotated[str, Field(min_length=1, max_length=20)] | None = None
    max_docs: Annotated[Int, Field(ge=3, le=MAX_TABLE_DOCS)] | None = 2000
    config: Annotated[str, Field(max_length=200)] | None = None  # HF dataset config
    split: Name = "train"  # HF dataset split

    def check(self) -> CorpusIn:
        """What the field's length cannot say: the source names a corpus folder entry or a
        dataset id (no path of its own). Returns the corpus; an InputError otherwise."""
        if not (_LOCAL.match(self.source) or _HF_DATASET.match(self.source)):
            raise InputError(
                f"corpus {self.source!r} is not 'local:NAME' (a file or folder in the corpus "
                "folders) or 'hf:ORG/NAME' (a Hugging Face dataset id)"
            )
        return self


class RecoveryOptionsIn(Strict):
    """The analysis settings (module doc of forgetmap.analysis.recoverability_fitting)."""

    max_tokens: Annotated[Int, Field(ge=16, le=32768)] = DEFAULT_MAX_TOKENS
    k: Annotated[Int, Field(ge=1, le=262144)] = DEFAULT_K
    eval_fraction: Annotated[float, Field(ge=0.05, le=0.5)] = 0.2  # documents held out as EVAL
    # last part of FIT used to choose the L2 penalty
    select_fraction: Annotated[float, Field(ge=0.05, le=0.5)] = 0.1
    seed: Annotated[Int, Field(ge=0, le=MAX_ID)] = 0
    n_boot: Annotated[Int, Field(ge=100, le=20000)] = 2000
    controls: list[Literal[CONTROLS]] = list(CONTROLS)  # type: ignore[valid-type]


class ShardCorpus(CorpusIn):
    model_config = ConfigDict(strict=True, extra="ignore")


class ShardOptions(RecoveryOptionsIn):
    model_config = ConfigDict(strict=True, extra="ignore")


class RecoveryShardSpec(BaseModel):
    """What a recoverability shard tells its worker (``shards.spec``): the pair, the corpus and the
    settings, as RecoverJobIn.shard_spec writes them. The worker checks it before loading anything
    and the app reads it again when the results come. Unknown keys are ignored: an older worker
    still reads a newer spec."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)
    base: ShardModel
    post: ShardModel
    corpus: ShardCorpus
    options: ShardOptions


class RecoverJobIn(Strict):
    """A recoverability analysis of a pair on a text corpus (one shard)."""

    kind: Literal["recover"]
    base: ModelIn
    post: ModelIn
    corpus: CorpusIn
    options: RecoveryOptionsIn = RecoveryOptionsIn()
    label: Annotated[str, Field(max_length=500)] | None = None
    stage: Annotated[str, Field(max_length=50)] | None = None

    def check(self) -> RecoverJobIn:
        """What the fields cannot see one by one. Returns the job; an InputError otherwise."""
        if self.base.name == self.post.name:
            raise InputError("the base and the post-trained model need different names")
        self.corpus.check()
        return self

    def shard_spec(self) -> RecoveryShardSpec:
        """What the worker needs; its hash keys reuse (same models, corpus and settings)."""
        parts = self.model_dump(mode="json", include={"base", "post", "corpus", "options"})
        return RecoveryShardSpec.model_validate(parts)

    def payload(self) -> dict[str, Any]:
        """The job as stored (``jobs.request``); the job page links the pair through ``pairs``,
        as for evaluation jobs."""
        pair = {
            "base": self.base.name,
            "post": self.post.name,
            "label": self.label,
            "stage": self.stage,
        }
        return {**self.model_dump(mode="json"), "pairs": [pair]}


class RecoveryIn(Strict):
    """What a worker sends when a recoverability shard is done (``POST
    /api/shards/{id}/recovery``): the per-document loss sums, from which the app recomputes every
    share, and what the worker fitted and planted."""

    table: dict[str, list[Any]]
    corrections: dict[str, dict[str, dict[str, Any]]] = Field(
        default_factory=dict
    )  # model -> kind -> fit
    controls: dict[str, dict[str, Any]] = Field(default_factory=dict)  # what each control planted
    timing: dict[str, dict[str, Any]] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)
