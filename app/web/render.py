"""Presentation helpers for model output (pure). Text stays text: templates escape every piece."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

COLLAPSE_OVER = 1200  # characters; longer responses show their ending and fold the rest
TAIL_CHARS = 500


@dataclass(frozen=True)
class Segment:
    text: str
    mark: bool = False


def highlight(response: str | None, prediction: str | None) -> list[Segment]:
    """Split ``response`` so that the rightmost occurrence of the extracted answer is marked.

    A one-letter answer must stand alone (not inside a word); longer answers match as written.
    """
    if not response:
        return []
    if not prediction or not prediction.strip():
        return [Segment(response)]
    needle = re.escape(prediction.strip())
    pattern = (
        rf"(?<![A-Za-z0-9]){needle}(?![A-Za-z0-9])" if len(prediction.strip()) <= 2 else needle
    )
    matches = list(re.finditer(pattern, response))
    if not matches:
        return [Segment(response)]
    m = matches[-1]
    return [Segment(response[: m.start()]), Segment(m.group(0), True), Segment(response[m.end() :])]


def is_long(response: str | None) -> bool:
    return bool(response and len(response) > COLLAPSE_OVER)


def split_tail(segments: list[Segment]) -> tuple[list[Segment], list[Segment]]:
    """(head, tail) of highlighted segments with the tail holding the last TAIL_CHARS characters."""
    total = sum(len(s.text) for s in segments)
    cut = max(total - TAIL_CHARS, 0)
    head: list[Segment] = []
    tail: list[Segment] = []
    seen = 0
    for s in segments:
        end = seen + len(s.text)
        if end <= cut:
            head.append(s)
        elif seen >= cut or s.mark:
            tail.append(s)
        else:
            head.append(Segment(s.text[: cut - seen]))
            tail.append(Segment(s.text[cut - seen :]))
        seen = end
    return head, tail


def choices_list(choices: str | None) -> list[str]:
    if not choices:
        return []
    try:
        values = json.loads(choices)
    except json.JSONDecodeError:
        return [choices]
    return [str(v) for v in values] if isinstance(values, list) else [str(values)]


def option_letter(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else str(i + 1)


def share(stat: dict | None) -> str:
    """A recovery share with its interval, in percent: ``62.3 [55.0, 70.1]`` ("–" if undefined)."""
    if not stat or stat.get("estimate") is None:
        return "–"

    def pct(x):
        return "–" if x is None else f"{100 * x:.1f}"

    return f"{pct(stat['estimate'])} [{pct(stat.get('lo'))}, {pct(stat.get('hi'))}]"
