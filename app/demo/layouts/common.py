"""What lm-eval's and lighteval's writers share in these synthetic trees: the documents (multiple
choice and generative), hashes and per-choice log-likelihoods. ``lm_eval`` and ``lighteval`` write
the files; see their docstrings for the writers' source each follows."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

DEFAULT_TIMESTAMP = "2024-05-13T16-13-22.123456"
"""``datetime.now().isoformat().replace(":", "-")``, as both tools name their files."""

LETTERS = "ABCDEFGHIJ"


@dataclass(frozen=True)
class McDoc:
    subject: str
    question: str
    choices: tuple[str, ...]
    answer: int


MC_DOCS: tuple[McDoc, ...] = (
    McDoc(
        "anatomy",
        "Which of the following is the body cavity that contains the pituitary gland?",
        ("Abdominal", "Cranial", "Pleural", "Spinal"),
        1,
    ),
    McDoc(
        "anatomy",
        "Which of these branches of the trigeminal nerve contain somatic motor processes?",
        (
            "The supraorbital nerve",
            "The infraorbital nerve",
            "The mental nerve",
            "None of the above",
        ),
        3,
    ),
    McDoc(
        "anatomy",
        "The pleura",
        (
            "have no sensory innervation.",
            "are separated by a 2 mm space.",
            "extend into the neck.",
            "are composed of respiratory epithelium.",
        ),
        2,
    ),
    McDoc(
        "anatomy",
        "In Angle's Class II Div 2 occlusion there is",
        (
            "excess overbite of the upper lateral incisors.",
            "negative overjet of the upper central incisors.",
            "excess overjet of the upper lateral incisors.",
            "excess overjet of the upper central incisors.",
        ),
        2,
    ),
    McDoc(
        "anatomy",
        "Which of the following is the most common site of a berry aneurysm?",
        (
            "Anterior communicating artery",
            "Basilar artery",
            "Posterior cerebral artery",
            "Vertebral artery",
        ),
        0,
    ),
    McDoc(
        "anatomy",
        "The chordae tendineae are found in the",
        ("atria.", "ventricles.", "aorta.", "pulmonary veins."),
        1,
    ),
)
"""MMLU-style documents (subject, question, 4 choices, answer index); cycled for longer runs."""

NAVIGATE_DOCS: tuple[tuple[str, str], ...] = (
    (
        "If you follow these instructions, do you return to the starting point? Always face "
        "forward. Take 1 step backward. Take 9 steps left. Take 2 steps backward. Take 6 steps "
        "forward. Take 4 steps forward. Take 4 steps backward. Take 3 steps right.\nOptions:\n"
        "- Yes\n- No",
        "No",
    ),
    (
        "If you follow these instructions, do you return to the starting point? Take 8 steps. "
        "Take 1 step. Turn left. Turn left. Take 9 steps.\nOptions:\n- Yes\n- No",
        "Yes",
    ),
    (
        "If you follow these instructions, do you return to the starting point? Always face "
        "forward. Take 6 steps left. Take 7 steps right. Take 2 steps left. Take 10 steps "
        "right.\nOptions:\n- Yes\n- No",
        "No",
    ),
    (
        "If you follow these instructions, do you return to the starting point? Turn around. "
        "Take 3 steps. Turn around. Take 3 steps.\nOptions:\n- Yes\n- No",
        "Yes",
    ),
)
"""BIG-Bench Hard ``navigate`` documents (input, target); cycled for longer runs."""

GSM8K_DOCS: tuple[tuple[str, str, str], ...] = (
    (
        "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips "
        "in May. How many clips did Natalia sell altogether in April and May?",
        "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 "
        "clips altogether in April and May.\n#### 72",
        "72",
    ),
    (
        "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of "
        "babysitting. How much did she earn?",
        "Weng earns 12/60 = $<<12/60=0.2>>0.2 per minute.\nWorking 50 minutes, she earned "
        "0.2 x 50 = $<<0.2*50=10>>10.\n#### 10",
        "10",
    ),
    (
        "James writes a 3-page letter to 2 different friends twice a week. How many pages "
        "does he write a year?",
        "He writes each friend 3*2=<<3*2=6>>6 pages a week\nSo he writes 6*2=<<6*2=12>>12 "
        "pages every week\nThat means he writes 12*52=<<12*52=624>>624 pages a year\n#### 624",
        "624",
    ),
)


def sha256_hex(text: str) -> str:
    """lm-eval's ``hash_string``: sha256 hex digest."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def score_value(value: Any) -> float:
    return float(value)


def is_right(value: Any) -> bool:
    return float(value) >= 0.5


def choice_loglikelihoods(n: int, gold: int, right: bool, i: int) -> list[float]:
    """Per-choice log-likelihoods whose argmax is ``gold`` iff ``right``."""
    base = [-2.5 - 0.37 * ((i + j) % 5) for j in range(n)]
    winner = gold if right else (gold + 1) % n
    base[winner] = -0.4 - 0.01 * (i % 7)
    return [round(v, 6) for v in base]


def mmlu_context(doc: McDoc, n: int) -> str:
    subject = doc.subject.replace("_", " ")
    lines = [f"The following are multiple choice questions (with answers) about {subject}.", ""]
    lines.append(doc.question.strip())
    for letter, choice in zip(LETTERS, doc.choices[:n], strict=False):
        lines.append(f"{letter}. {choice}")
    lines.append("Answer:")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# lm-evaluation-harness
# --------------------------------------------------------------------------------------------
