"""Asking the model again, the pure part: answer regeneration for a pair's flips and its controls
(issue 53).

A 1->0 flip says the post model's answer was wrong; it does not say whether the knowledge is gone
or only out of reach (the paper's caution: F_true measures lost access). The probe asks again,
flip by flip: the post model is shown its original prompt, **its own answer**, and a short
forced-answer continuation (``FORCED_ANSWER``: "Therefore, the answer is ("); each option's
letter is scored by log-likelihood after it, and the flip is **recovered** when the gold option
scores strictly highest (a tie is not a recovery). One forward pass over prompt + answer + prefix
per flip; no generation. A generative item (no options) is asked again by regenerating a short
answer after its own (``FINAL_ANSWER``: "Therefore, the final answer is ", greedy, a few tokens)
and grading it as the evaluation grades that benchmark: recovered when it is right.

A rate means nothing without what the same method "recovers" where there is nothing to recover
(the recoverability study's rule), so every probe runs with controls, each a list of items like
the flips' and read the same way (``probe_report``):

- ``flips``: the pair's 1->0 rows, probed on the post model;
- ``shuffled``: the same flips, each shown another flip's answer (``shuffled_answers``: a
  derangement, so no flip keeps its own): what the probe recovers from the question alone plus an
  unrelated answer;
- ``kept``: a sample of the pair's 1->1 rows on the post model: the probe on answers that were
  right, its agreement with them (a probe that misses these is not reading answers at all);
- ``base``: the flips on the base model with the base's own (right) answers.

Chance is each item's 1/k (k its options; 0 for a generative item); a rate is reported with the
chance it beats and with its difference from the shuffled control, with a 95% interval for that
difference (the normal interval of a difference of two proportions).

A **judge** reads the same way (``judge_context``): a judge model is shown the question as the
judged model saw it, the answer it gave, and "which option does the answer commit to? ... (";
the options' letters and "0" (none) are scored, and the top one is the judge's reading of the
answer (forgetmap.services.judge keeps it as a score set).

Plain Python: the worker scores (``forgetmap.worker.probe``), the app stores and reports.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from forgetmap.core.recoverability_names import (
    FINAL_ANSWER,
    FORCED_ANSWER,
    JUDGE_TEMPLATE,
    NO_OPTION_LABEL,
    PROBE_ARMS,
)

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
ARMS = PROBE_ARMS
Z_95 = 1.959963984540054


GENERATIVE = 0
"""The option count of a generative item (no options): its gold is 0, its answer ``gold_answer``."""


@dataclass(frozen=True)
class ProbeItem:
    """One row to probe: its question's prompt as the model saw it, an answer to show after it
    (the model's own, or another's in the shuffled control), the option count and the gold
    option's index; a generative item has ``GENERATIVE`` options, gold 0 and its right answer
    (``gold_answer``) to grade the regenerated one against."""

    key: str
    prompt: str
    answer: str
    num_choices: int
    gold: int
    gold_answer: str | None = None

    @property
    def generative(self) -> bool:
        return self.num_choices == GENERATIVE

    def __post_init__(self) -> None:
        if self.generative:
            if self.gold != 0 or not self.gold_answer:
                raise ValueError(f"{self.key}: a generative item needs gold 0 and its answer")
            return
        if not 2 <= self.num_choices <= len(LETTERS):
            raise ValueError(
                f"{self.key}: a probe needs 2 to {len(LETTERS)} options, got {self.num_choices}"
            )
        if not 0 <= self.gold < self.num_choices:
            raise ValueError(
                f"{self.key}: gold option {self.gold} is not among {self.num_choices} options"
            )


@dataclass(frozen=True)
class ProbeOutcome:
    """What the probe made of one item: the option that scored highest (None on a tie for the
    top), the gold option, and whether the gold option won outright."""

    key: str
    chosen: int | None
    gold: int
    num_choices: int

    @property
    def recovered(self) -> bool:
        return self.chosen == self.gold


def gold_option(
    gold: str | None, choices: Sequence[str] | None, num_choices: int | None
) -> int | None:
    """The gold option's index as the store keeps a multiple-choice row: a letter (``"B"``, the
    worker's own and most harnesses'), a 0-based number (``"1"``), or the gold option's text
    among ``choices``. None when the row has no options or its gold names none of them."""
    if gold is None or not num_choices or num_choices < 2:
        return None
    text = gold.strip()
    if len(text) == 1 and text in LETTERS[:num_choices]:
        return LETTERS.index(text)
    if text.isdigit() and int(text) < num_choices:
        return int(text)
    if choices is not None and len(choices) == num_choices:
        matches = [i for i, choice in enumerate(choices) if choice.strip() == text]
        if len(matches) == 1:
            return matches[0]
    return None


def probe_context(item: ProbeItem, prefix: str = FORCED_ANSWER) -> str:
    """The text the options are scored after: prompt, the shown answer, the forced prefix."""
    return f"{item.prompt}{item.answer}{prefix}"


def regeneration_context(item: ProbeItem, prefix: str = FINAL_ANSWER) -> str:
    """What a generative item's short answer is generated after: prompt, the shown answer, the
    final-answer prefix."""
    return f"{item.prompt}{item.answer}{prefix}"


def regenerated_outcome(item: ProbeItem, right: bool) -> ProbeOutcome:
    """A generative item's outcome: its regenerated answer graded right (chosen = gold = 0) or
    not (chosen None)."""
    return ProbeOutcome(item.key, 0 if right else None, 0, GENERATIVE)


def option_labels(num_choices: int) -> list[str]:
    """The continuations scored after the prefix: the options' letters, A first."""
    return list(LETTERS[:num_choices])


def outcome_of(item: ProbeItem, logprobs: Sequence[float]) -> ProbeOutcome:
    """The option with the highest log-likelihood (None when two share the top score)."""
    if len(logprobs) != item.num_choices:
        raise ValueError(f"{item.key}: {len(logprobs)} scores for {item.num_choices} options")
    best = max(logprobs)
    top = [i for i, value in enumerate(logprobs) if value == best]
    return ProbeOutcome(item.key, top[0] if len(top) == 1 else None, item.gold, item.num_choices)


def judge_context(prompt: str, answer: str, template: str = JUDGE_TEMPLATE) -> str:
    """What a judge model reads before naming an option: the question as the judged model saw it
    (its options included), the answer it gave, and the judge's forced choice."""
    return template.format(prompt=prompt, answer=answer)


def judge_labels(num_choices: int) -> list[str]:
    """A judge's choices: the options' letters, then ``NO_OPTION_LABEL`` (it commits to none)."""
    return [*option_labels(num_choices), NO_OPTION_LABEL]


def shuffled_answers(items: Sequence[ProbeItem], seed: int) -> list[ProbeItem]:
    """Each item shown another item's answer: a random derangement of the answers (seeded), so
    no item keeps its own; multiple-choice items take each other's answers, generative items each
    other's. A kind with fewer than two items cannot be shuffled (it has none in the result);
    the result keeps the items' order."""
    rng = random.Random(seed)
    answer_of: dict[int, str] = {}
    for generative in (False, True):
        group = [i for i, item in enumerate(items) if item.generative == generative]
        if len(group) < 2:
            continue
        # Sattolo's algorithm: a uniformly random cyclic permutation, which moves every element
        order = list(range(len(group)))
        for i in range(len(group) - 1, 0, -1):
            j = rng.randrange(i)
            order[i], order[j] = order[j], order[i]
        for i, index in enumerate(group):
            answer_of[index] = items[group[order[i]]].answer
    return [
        ProbeItem(
            item.key, item.prompt, answer_of[i], item.num_choices, item.gold, item.gold_answer
        )
        for i, item in enumerate(items)
        if i in answer_of
    ]


@dataclass(frozen=True)
class ArmSummary:
    """One arm's outcomes: how many items, how many recovered, the rate, and the rate chance
    alone gives (the mean of 1/k over its items)."""

    n: int
    recovered: int
    rate: float | None
    chance: float | None


def summarize_arm(outcomes: Sequence[ProbeOutcome]) -> ArmSummary:
    n = len(outcomes)
    if n == 0:
        return ArmSummary(0, 0, None, None)
    recovered = sum(o.recovered for o in outcomes)
    # a generative answer is not guessed among options: its chance is taken as 0
    chance = sum(1 / o.num_choices for o in outcomes if o.num_choices != GENERATIVE) / n
    return ArmSummary(n, recovered, recovered / n, chance)


def difference_interval(a: ArmSummary, b: ArmSummary) -> tuple[float, float, float] | None:
    """rate(a) - rate(b) and its 95% normal interval (two independent proportions), clipped to
    [-1, 1]; None when either arm is empty."""
    if a.rate is None or b.rate is None:
        return None
    diff = a.rate - b.rate
    half = Z_95 * math.sqrt(a.rate * (1 - a.rate) / a.n + b.rate * (1 - b.rate) / b.n)
    return diff, max(diff - half, -1.0), min(diff + half, 1.0)


def probe_report(arms: Mapping[str, Sequence[ProbeOutcome]]) -> dict:
    """Per arm of ``ARMS`` its summary, and the flips' recovery beyond the shuffled control (the
    number to read: what the probe recovers that an unrelated answer does not)."""
    unknown = set(arms) - set(ARMS)
    if unknown:
        raise ValueError(f"unknown probe arms: {sorted(unknown)} (known: {', '.join(ARMS)})")
    summaries = {arm: summarize_arm(arms.get(arm, ())) for arm in ARMS}
    beyond = difference_interval(summaries["flips"], summaries["shuffled"])
    return {
        "arms": {
            arm: {"n": s.n, "recovered": s.recovered, "rate": s.rate, "chance": s.chance}
            for arm, s in summaries.items()
        },
        "recovered_beyond_shuffled": None
        if beyond is None
        else {"difference": beyond[0], "low": beyond[1], "high": beyond[2]},
    }
