"""Why an answer is what it is: each stored answer's status, and the causes a flip can have.

A wrong answer is not always knowledge lost. On published outputs of real base -> chat pairs a
sixth to a quarter of the 1->0 flips are a post answer from which no option could be extracted at
all (issue 51), and some answers stop at the token limit. Every stored answer carries one status:

``answered``
    an answer was found and graded (a log-likelihood choice always is).
``no_answer``
    the text finished but nothing could be extracted from it: an empty ``prediction`` beside a
    ``response`` in a table, lighteval's empty ``extracted_predictions`` without truncation,
    lm-eval's ``[invalid]``, our workers' extractor finding nothing.
``truncated``
    only the token limit: lighteval's ``truncated`` / ``truncated_tokens_count`` above 0, a finish
    reason ``length`` (inspect's ``max_tokens``), our workers' own finish reason from vLLM.
``refused``
    a ``no_answer`` whose text declines to answer (:func:`refines_to_refused`, conservative: a
    short text that opens with a refusal; a long chain of thought that hedges stays
    ``no_answer``).

NULL (the source says nothing) counts as ``answered``. A paired sample's causes are the statuses
other than ``answered`` of its two answers, as bits (``CAUSE_BITS``): the stored counts keep them
apart so that the map can leave any set of causes out of every count, intervals and noise floors
included (``forgetmap.db.pairing``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from forgetmap.core.errors import InputError

ANSWERED = "answered"
NO_ANSWER = "no_answer"
TRUNCATED = "truncated"
REFUSED = "refused"
STATUSES = (ANSWERED, NO_ANSWER, TRUNCATED, REFUSED)
CAUSES = (NO_ANSWER, TRUNCATED, REFUSED)
"""The statuses that can explain a wrong answer other than not knowing: what ``exclude=`` names."""

CAUSE_BITS = {TRUNCATED: 1, NO_ANSWER: 2, REFUSED: 4}
"""A paired sample's ``causes`` (a small integer in the count tables): the bits of the statuses its
base and post answers have, or 0 when both were answered. Bit 1 is ``truncated`` so that counts
stored before statuses existed (their cut-off samples) keep their meaning."""

LEGACY_NO_ANSWER = "[invalid]"
"""lm-eval's prediction where its filter found no answer (both ``strict-match`` and
``flexible-extract``)."""


def parse_exclude(text: str | Iterable[str] | None) -> frozenset[str]:
    """The causes named by ``--exclude`` / ``exclude=`` (comma-separated, or a list), checked."""
    if text is None:
        return frozenset()
    names = text.split(",") if isinstance(text, str) else list(text)
    chosen = frozenset(n.strip() for n in names if n.strip())
    unknown = sorted(chosen - set(CAUSES))
    if unknown:
        raise InputError(
            f"exclude names unknown causes {', '.join(unknown)}; "
            f"choose among {', '.join(CAUSES)} (comma-separated)"
        )
    return chosen


def cause_mask(causes: Iterable[str]) -> int:
    """The bits of ``causes`` (see ``CAUSE_BITS``): a count row is left out when its ``causes``
    share a bit with the mask."""
    mask = 0
    for cause in causes:
        mask |= CAUSE_BITS[cause]
    return mask


_REFUSAL = re.compile(
    r"^\W*(?:I\s*(?:'m|am)\s+(?:sorry|unable|not able)|"
    r"I\s+(?:can\s*not|can't|cannot|won't|will not)"
    r"\s+(?:help|assist|answer|provide|comply|do that|respond)|I\s+apologi[sz]e|"
    r"(?:Sorry|Unfortunately),?\s+(?:but\s+)?I\s+(?:can|am|'m|won't|will not)|As an AI\b)",
    re.IGNORECASE,
)
REFUSAL_MAX_CHARS = 600
"""A refusal is short: a longer text with no option is a chain of thought that found none, however
it opens (the conservative side: ``no_answer``, not ``refused``)."""


def refines_to_refused(response: str | None) -> bool:
    """Whether a ``no_answer`` text is a refusal: short, and opening with one (``I'm sorry, but I
    can't help with that``, ``I cannot answer this``, ``As an AI ...``)."""
    if not response:
        return False
    text = response.strip()
    return len(text) <= REFUSAL_MAX_CHARS and bool(_REFUSAL.match(text))
