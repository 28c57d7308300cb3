"""The Open LLM Leaderboards' scored tasks as questions: each task's real size, option counts,
few-shot count and metrics (``SHAPES``), its questions made up to look like the real ones
(``questions``: seeded, so every model of a bench meets the same ones), and a model's answers to
them (``answered``: right where its skill beats a question's difficulty). The files both
generations write from them are ``forgetmap.demo.layouts.leaderboard``'s."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class Item:
    """One question as the harness showed it (``question``, after the few-shot ``context``), its
    options (None: generative), the gold option, whether the model was right, (v1 TruthfulQA)
    how many options are mc1's, and for generative ones the reference answer and the model's
    text (defaults: "answer to <question>", said or not). ``doc``: v2's dataset row."""

    question: str
    options: tuple[str, ...] | None
    right: bool
    gold: int = 0
    mc1: int | None = None
    context: str = ""
    reference: str | None = None
    response: str | None = None
    doc: Mapping[str, Any] | None = None

    @property
    def answer(self) -> str:
        return self.reference or f"answer to {self.question}"

    @property
    def said(self) -> str:
        """The model's text of a generative question."""
        return self.response or (self.answer if self.right else "something else")


def loglikelihoods(item: Item) -> list[float]:
    """Per option: the best is the gold option when the model was right, another when not."""
    n = len(item.options or ())
    best = item.gold if item.right else (item.gold + 1) % n
    return [-0.25 if i == best else -1.5 - i / 10 for i in range(n)]


# ---------------------------------------------------------------------------------------------
# the scored tasks at their real sizes


@dataclass(frozen=True)
class Shape:
    """A scored task: its name in the files, its questions in the real dataset, the option
    counts its questions draw from (() generative), its few-shot count, its metrics (the
    scored one first) and how its questions look (``family``)."""

    task: str
    n: int
    k: tuple[int, ...]
    shots: int
    metrics: tuple[str, ...]
    family: str


# the MMLU test split, questions per subject (14,042)
_MMLU = dict(
    abstract_algebra=100,
    anatomy=135,
    astronomy=152,
    business_ethics=100,
    clinical_knowledge=265,
    college_biology=144,
    college_chemistry=100,
    college_computer_science=100,
    college_mathematics=100,
    college_medicine=173,
    college_physics=102,
    computer_security=100,
    conceptual_physics=235,
    econometrics=114,
    electrical_engineering=145,
    elementary_mathematics=378,
    formal_logic=126,
    global_facts=100,
    high_school_biology=310,
    high_school_chemistry=203,
    high_school_computer_science=100,
    high_school_european_history=165,
    high_school_geography=198,
    high_school_government_and_politics=193,
    high_school_macroeconomics=390,
    high_school_mathematics=270,
    high_school_microeconomics=238,
    high_school_physics=151,
    high_school_psychology=545,
    high_school_statistics=216,
    high_school_us_history=204,
    high_school_world_history=237,
    human_aging=223,
    human_sexuality=131,
    international_law=121,
    jurisprudence=108,
    logical_fallacies=163,
    machine_learning=112,
    management=103,
    marketing=234,
    medical_genetics=100,
    miscellaneous=783,
    moral_disputes=346,
    moral_scenarios=895,
    nutrition=306,
    philosophy=311,
    prehistory=324,
    professional_accounting=282,
    professional_law=1534,
    professional_medicine=272,
    professional_psychology=612,
    public_relations=110,
    security_studies=245,
    sociology=201,
    us_foreign_policy=100,
    virology=166,
    world_religions=171,
)
# lm-eval's leaderboard/bbh_mc: per task its questions (5,761) and its options
_BBH = dict(
    boolean_expressions=(250, 2),
    causal_judgement=(187, 2),
    date_understanding=(250, 6),
    disambiguation_qa=(250, 3),
    formal_fallacies=(250, 2),
    geometric_shapes=(250, 11),
    hyperbaton=(250, 2),
    logical_deduction_five_objects=(250, 5),
    logical_deduction_seven_objects=(250, 7),
    logical_deduction_three_objects=(250, 3),
    movie_recommendation=(250, 5),
    navigate=(250, 2),
    object_counting=(250, 19),
    penguins_in_a_table=(146, 5),
    reasoning_about_colored_objects=(250, 18),
    ruin_names=(250, 4),
    salient_translation_error_detection=(250, 6),
    snarks=(178, 2),
    sports_understanding=(250, 2),
    temporal_sequences=(250, 4),
    tracking_shuffled_objects_five_objects=(250, 5),
    tracking_shuffled_objects_seven_objects=(250, 7),
    tracking_shuffled_objects_three_objects=(250, 3),
    web_of_lies=(250, 2),
)
_MATH = dict(
    algebra=307,
    counting_and_prob=123,
    geometry=132,
    intermediate_algebra=280,
    num_theory=154,
    prealgebra=193,
    precalculus=135,
)
# MMLU-Pro: 10 options, one question in six fewer (its duplicate options were removed)
_PRO_K = (10,) * 40 + (3, 4, 5, 6, 7, 8, 9, 9)

SHAPES: dict[str, tuple[Shape, ...]] = {
    "v1": (
        Shape("harness|arc:challenge|25", 1172, (4,) * 60 + (3, 5), 25, ("acc_norm", "acc"), "arc"),
        Shape("harness|hellaswag|10", 10042, (4,), 10, ("acc_norm", "acc"), "hellaswag"),
        *(
            Shape(f"harness|hendrycksTest-{s}|5", n, (4,), 5, ("acc",), "mmlu")
            for s, n in _MMLU.items()
        ),
        Shape(
            "harness|truthfulqa:mc|0",
            817,
            (2, 3, 4, 4, 5, 5, 6, 7, 8, 13),
            0,
            ("mc1", "mc2"),
            "truthfulqa",
        ),
        Shape("harness|winogrande|5", 1267, (2,), 5, ("acc",), "winogrande"),
        Shape("harness|gsm8k|5", 1319, (), 5, ("acc",), "gsm8k"),
    ),
    "v2": (
        *(
            Shape(f"leaderboard_bbh_{t}", n, (k,), 3, ("acc_norm",), "bbh")
            for t, (n, k) in _BBH.items()
        ),
        *(
            Shape(f"leaderboard_gpqa_{s}", n, (4,), 0, ("acc_norm",), "gpqa")
            for s, n in (("diamond", 198), ("extended", 546), ("main", 448))
        ),
        Shape("leaderboard_mmlu_pro", 12032, _PRO_K, 5, ("acc",), "mmlu_pro"),
        Shape("leaderboard_musr_murder_mysteries", 250, (2,), 0, ("acc_norm",), "musr"),
        Shape("leaderboard_musr_object_placements", 256, (3, 4, 5), 0, ("acc_norm",), "musr"),
        Shape("leaderboard_musr_team_allocation", 250, (3,), 0, ("acc_norm",), "musr"),
        *(
            Shape(f"leaderboard_math_{s}_hard", n, (), 4, ("exact_match",), "math")
            for s, n in _MATH.items()
        ),
        Shape(
            "leaderboard_ifeval",
            541,
            (),
            0,
            (
                "prompt_level_strict_acc",
                "inst_level_strict_acc",
                "prompt_level_loose_acc",
                "inst_level_loose_acc",
            ),
            "ifeval",
        ),
    ),
    "push": (  # lm-eval's own tasks of v1's benchmarks, as a researcher's push holds them
        Shape("arc_challenge", 1172, (4,) * 60 + (3, 5), 25, ("acc", "acc_norm"), "arc"),
        Shape("hellaswag", 10042, (4,), 10, ("acc", "acc_norm"), "hellaswag"),
        *(Shape(f"mmlu_{s}", n, (4,), 5, ("acc",), "mmlu") for s, n in _MMLU.items()),
        Shape("winogrande", 1267, (2,), 5, ("acc",), "winogrande"),
        Shape("gsm8k", 1319, (), 5, ("exact_match",), "gsm8k"),
    ),
}
"""Each generation's scored tasks, as its leaderboard ran them (v1: 28,659 questions; v2:
21,606), and an lm-eval push of none of the leaderboard's tasks (27,842)."""

# words per question and per option, about the datasets' own (MuSR's: its story)
_LENGTHS = {
    "arc": (22, 5),
    "hellaswag": (40, 20),
    "mmlu": (40, 7),
    "truthfulqa": (12, 10),
    "winogrande": (24, 2),
    "gsm8k": (46, 0),
    "bbh": (60, 3),
    "gpqa": (90, 12),
    "mmlu_pro": (45, 8),
    "musr": (700, 3),
    "math": (40, 0),
    "ifeval": (45, 0),
}

_VOCABULARY = tuple(
    "the of and to in is that for it as was with be by on not he this are or his from at which "
    "but have an they you were her she there been one all we their has would when if so no what "
    "up out into more other could time two only new some than its these first may then do any "
    "like my now over such our man me even most made after also did many before must through "
    "years where much your way well down should because each just those how too little state "
    "good very make world still own see men work long get here between both life being under "
    "never day same another know while last might us great old year off come since against go "
    "came right used take three number value force energy cell water light answer system".split()
)


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(_VOCABULARY, k=max(1, n)))


def _sentence(rng: random.Random, n: int, end: str = ".") -> str:
    text = _words(rng, rng.randint(max(1, n // 2), n * 3 // 2 + 1))
    return text[0].upper() + text[1:] + end


def _laid_out(shape: Shape, body: str, options: list[str], rng: random.Random) -> tuple[str, dict]:
    """The question as the harness shows it, and (v2) its dataset row."""
    listed = "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(options))
    family = shape.family
    if family == "mmlu":
        # v1's harness|hendrycksTest-<subject>|5, a push's mmlu_<subject>
        named = (
            shape.task.split("-", 1)[1].rsplit("|", 1)[0] if "-" in shape.task else shape.task[5:]
        )
        subject = named.replace("_", " ")
        return (
            f"The following are multiple choice questions (with answers) about {subject}."
            f"\n\n{body}\n{listed}\nAnswer:"
        ), {}
    if family == "bbh":
        marked = "\n".join(f"({LETTERS[i]}) {o}" for i, o in enumerate(options))
        return f"Q: {body}\nOptions:\n{marked}\nA:", {"input": f"{body}\nOptions:\n{marked}"}
    if family == "gpqa":
        doc: dict[str, Any] = {
            "Question": body,
            **{f"choice{i + 1}": o for i, o in enumerate(options)},
        }
        return (
            f"What is the correct answer to this question:{body}\nChoices:\n{listed}\nAnswer: ",
            doc,
        )
    if family == "mmlu_pro":
        doc = {
            "question_id": rng.randrange(10**5),
            "question": body,
            "options": options,
            "category": "other",
            "src": "ori_mmlu-misc",
        }
        return f"Question:\n{body}\nOptions:\n{listed}\nAnswer:", doc
    if family == "musr":
        question = _sentence(rng, 12, "?")
        numbered = "\n".join(f"{i + 1} - {o}" for i, o in enumerate(options))
        doc = {"narrative": body, "question": question, "choices": repr(options)}
        return (
            f"{body}\n\n{question}\n\nPick one of the following choices:\n{numbered}\n\n"
            "You must pick one option."
        ), doc
    if family == "math":
        return f"Problem:\n{body}\n\nSolution:", {"problem": body, "level": "Level 5"}
    if family == "ifeval":
        return body, {
            "key": rng.randrange(10**4),
            "prompt": body,
            "instruction_id_list": ["length_constraints:number_words"],
        }
    if family in ("arc", "truthfulqa", "gsm8k"):
        return f"Question: {body}\nAnswer:", {}
    return body, {}  # hellaswag, winogrande: the options continue the text


def _question(shape: Shape, rng: random.Random, number: int) -> Item:
    """One question of ``shape``, its text and options drawn from ``rng``."""
    q_words, o_words = _LENGTHS[shape.family]
    body = f"{_sentence(rng, q_words, '?')} ({number})"
    if not shape.k:  # generative
        text, doc = _laid_out(shape, body, [], rng)
        reference = str(rng.randrange(1000))
        return Item(
            text,
            None,
            False,
            reference=reference,
            doc={**doc, "answer": reference} if doc else None,
        )
    k = rng.choice(shape.k)
    mc1 = None
    if shape.family == "truthfulqa":  # mc1's options, then mc2's
        mc1, k = k, k + rng.randint(1, 6)
    options = [_words(rng, rng.randint(max(1, o_words // 2), o_words + 1)) for _ in range(k)]
    gold = 0 if mc1 else rng.randrange(k)
    text, doc = _laid_out(shape, body, options, rng)
    if shape.family == "mmlu":  # the options are in the text; the model scores their letters
        options = list(LETTERS[:k])
    if doc:
        doc = {**doc, "answer": LETTERS[gold], "answer_index": gold}
    return Item(text, tuple(options), False, gold=gold, mc1=mc1, doc=doc or None)


def _shots(shape: Shape) -> str:
    """The few-shot block before each question: ``shape.shots`` solved questions laid out like
    them (the same for every question, as lm-eval's ``first_n`` sampler gives), TruthfulQA's
    the harness's fixed six questions and answers."""
    rng = random.Random(f"shots:{shape.task}")
    if shape.family == "truthfulqa":
        return "".join(
            f"Q: {_sentence(rng, 10, '?')}\nA: {_sentence(rng, 10)}\n\n" for _ in range(6)
        )
    block = []
    for number in range(shape.shots):
        shot = _question(shape, rng, number)
        if shot.options is None:  # a worked solution
            solved = f" {_sentence(rng, 60)} The answer is {shot.reference}."
        else:
            solved = f" {shot.options[shot.gold]}"
        block.append(f"{shot.question}{solved}\n\n")
    return "".join(block)


def questions(shape: Shape, *, scale: float = 1.0, seed: int = 0) -> list[Item]:
    """``shape``'s questions (its real count times ``scale``, at least one), each after its
    few-shot block, none answered right yet (``answered``). The same for the same arguments."""
    rng = random.Random(f"{seed}:{shape.task}")
    context = _shots(shape)
    return [
        replace(_question(shape, rng, number), context=context)
        for number in range(max(1, round(shape.n * scale)))
    ]


def answered(
    shape: Shape, items: list[Item], skill: float, *, rng: random.Random, answer_tokens: int = 0
) -> tuple[list[Item], dict[str, list[Any]]]:
    """``items`` as a model of ``skill`` answered them, and the task's metric values. Right
    with probability floor + (1 - floor) * sigmoid(skill - difficulty), each question's
    difficulty fixed (every model meets the same), floor 1/k (generative: 0). A generative
    answer holds about ``answer_tokens`` words of reasoning (half to one and a half times)."""
    done: list[Item] = []
    values: dict[str, list[Any]] = {m: [] for m in shape.metrics}
    for item in items:
        difficulty = random.Random(item.question).gauss(0.0, 1.3)
        floor = 1 / (item.mc1 or len(item.options)) if item.options else 0.0  # mc1's k
        right = rng.random() < floor + (1 - floor) / (1 + math.exp(difficulty - skill))
        response = None
        if item.options is None:
            said = item.answer if right else str(rng.randrange(1000))
            reasoning = _words(rng, rng.randint(answer_tokens // 2, answer_tokens * 3 // 2))
            response = f"{reasoning}\nThe final answer is {said}" if answer_tokens else said
        done.append(replace(item, right=right, response=response))
        for metric in shape.metrics:
            values[metric].append(_metric_value(shape, metric, right, rng))
    return done, values


def _metric_value(shape: Shape, metric: str, right: bool, rng: random.Random) -> Any:
    """The scored metric is whether the model was right; the others as their harness writes
    them (TruthfulQA's mc2 a probability mass, IFEval's per-instruction lists)."""
    if metric == "mc2":
        return round(rng.random(), 6)
    if shape.family == "ifeval":
        return [right] * rng.randint(1, 3) if metric.startswith("inst") else right
    if metric != shape.metrics[0]:  # acc beside the scored acc_norm: mostly agrees
        right = right if rng.random() < 0.9 else not right
    return int(right) if shape.task.startswith("harness|") else float(right)
