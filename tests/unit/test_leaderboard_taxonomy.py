"""The Open LLM Leaderboards' suites in the taxonomy: every task of both generations, as their
files name it, to its benchmark, category and k; the suites' members; the paper's suite left as
it was; and the hub import's table of scored tasks agreeing with the suites."""

from __future__ import annotations

import pytest
from forgetmap.core import taxonomy
from forgetmap.core.taxonomy import (
    NOT_SCORED,
    canonical_name,
    category_for,
    lookup,
    scored_benchmarks,
    suite_benchmarks,
    suites,
    usual_num_choices,
)
from forgetmap.importers.hub.leaderboards import V1, V2
from forgetmap.importers.hub.truthfulqa import MC1_TASK

MMLU_SUBJECTS = sorted(
    b.name.split(":")[1] for b in scored_benchmarks() if b.name.startswith("mmlu:")
)
# lm-eval lm_eval/tasks/leaderboard/bbh_mc/*.yaml: the 24 multiple-choice BBH tasks
BBH_TASKS = (
    "boolean_expressions causal_judgement date_understanding disambiguation_qa formal_fallacies "
    "geometric_shapes hyperbaton logical_deduction_five_objects logical_deduction_seven_objects "
    "logical_deduction_three_objects movie_recommendation navigate object_counting "
    "penguins_in_a_table reasoning_about_colored_objects ruin_names "
    "salient_translation_error_detection snarks sports_understanding temporal_sequences "
    "tracking_shuffled_objects_five_objects tracking_shuffled_objects_seven_objects "
    "tracking_shuffled_objects_three_objects web_of_lies"
).split()
MATH_SUBSETS = (
    "algebra",
    "counting_and_prob",
    "geometry",
    "intermediate_algebra",
    "num_theory",
    "prealgebra",
    "precalculus",
)

V1_TASKS = [
    "harness|arc:challenge|25",
    "harness|hellaswag|10",
    *(f"harness|hendrycksTest-{s}|5" for s in MMLU_SUBJECTS),
    "harness|truthfulqa:mc|0",
    "harness|winogrande|5",
    "harness|gsm8k|5",
]
V2_TASKS = [
    *(f"leaderboard_bbh_{t}" for t in BBH_TASKS),
    *(f"leaderboard_gpqa_{s}" for s in ("main", "diamond", "extended")),
    "leaderboard_mmlu_pro",
    *(
        f"leaderboard_musr_{s}"
        for s in ("murder_mysteries", "object_placements", "team_allocation")
    ),
    *(f"leaderboard_math_{s}_hard" for s in MATH_SUBSETS),
    "leaderboard_ifeval",
]


@pytest.mark.parametrize(
    ("task", "name", "category", "k"),
    [
        # v1: lighteval's harness|<task>|<shots>
        ("harness|arc:challenge|25", "arc:challenge", "Logic", 4),
        ("harness|hellaswag|10", "hellaswag", "Language", 4),
        ("harness|hendrycksTest-abstract_algebra|5", "mmlu:abstract_algebra", "Math", 4),
        ("harness|hendrycksTest-world_religions|5", "mmlu:world_religions", "Liberal Arts", 4),
        (MC1_TASK, "truthfulqa:mc1", "Safety/Truth", None),  # varies per question
        ("harness|winogrande|5", "winogrande", "Commonsense", 2),
        ("harness|gsm8k|5", "gsm8k", "Math", None),  # generative
        # v2: lm-eval's leaderboard_<task>
        ("leaderboard_bbh_navigate", "bbh:navigate", "Logic", 2),
        ("leaderboard_bbh_causal_judgement", "bbh:causal_judgment", "Logic", 2),
        ("leaderboard_bbh_object_counting", "bbh:object_counting", "Knowledge/QA", 19),
        ("leaderboard_gpqa_main", "gpqa:main", "Science/Tech", 4),
        ("leaderboard_gpqa_diamond", "gpqa:diamond", "Science/Tech", 4),
        ("leaderboard_gpqa_extended", "gpqa:extended", "Science/Tech", 4),
        ("leaderboard_mmlu_pro", "mmlu_pro", "Knowledge/QA", None),  # 10, some items fewer
        ("leaderboard_musr_murder_mysteries", "musr:murder_mysteries", "Logic", None),
        ("leaderboard_musr_object_placements", "musr:object_placements", "Logic", None),
        ("leaderboard_musr_team_allocation", "musr:team_allocation", "Logic", None),
        ("leaderboard_math_algebra_hard", "math_hard:algebra", "Math", None),
        ("leaderboard_math_counting_and_prob_hard", "math_hard:counting_and_prob", "Math", None),
        ("leaderboard_ifeval", "ifeval", NOT_SCORED, None),
        # lm-eval's own spellings of the new benchmarks
        ("gpqa_main_zeroshot", "gpqa:main", "Science/Tech", 4),
        ("lighteval|gsm8k|0", "gsm8k", "Math", None),
    ],
)
def test_leaderboard_tasks(task, name, category, k):
    assert canonical_name(task) == name
    assert category_for(task, None) == category
    assert usual_num_choices(task) == k


def test_every_mmlu_subject_under_its_v1_name():
    assert len(MMLU_SUBJECTS) == 57
    for subject in MMLU_SUBJECTS:
        assert canonical_name(f"harness|hendrycksTest-{subject}|5") == f"mmlu:{subject}"


def test_suites():
    assert suites() == ("open_llm_leaderboard_v1", "open_llm_leaderboard_v2")
    v1, v2 = suite_benchmarks(V1.suite), suite_benchmarks(V2.suite)
    assert len(v1) == 62 and len(v2) == 39
    assert {n for n in v1 if n.startswith("mmlu:")} == {f"mmlu:{s}" for s in MMLU_SUBJECTS}
    assert {n for n in v2 if n.startswith("bbh:")} == {
        canonical_name(f"bbh_{t}") for t in BBH_TASKS
    }
    assert {n for n in v2 if not n.startswith(("bbh:", "math_hard:"))} == {
        "gpqa:main",
        "gpqa:diamond",
        "gpqa:extended",
        "mmlu_pro",
        "musr:murder_mysteries",
        "musr:object_placements",
        "musr:team_allocation",
        "ifeval",
    }


def test_the_papers_suite_is_left_as_it_was():
    paper = {b.name for b in scored_benchmarks()}
    assert len(paper) == 94
    assert all(b.paper for b in scored_benchmarks())
    added = set(suite_benchmarks(V1.suite) + suite_benchmarks(V2.suite)) - paper - {"ifeval"}
    assert added == {
        "winogrande",
        "gsm8k",
        "mmlu_pro",
        "gpqa:main",
        "gpqa:extended",
        *(f"math_hard:{s}" for s in MATH_SUBSETS),
    }
    assert all(lookup(name) is not None and not lookup(name).paper for name in added)


@pytest.mark.parametrize(("board", "tasks"), [(V1, V1_TASKS), (V2, V2_TASKS)])
def test_the_hub_imports_each_suites_tasks(board, tasks):
    """The hub import's table of scored tasks takes exactly the suite's (v1 TruthfulQA under the
    mc1 task it is imported as); a 0-shot run or a group is none of them."""
    assert all(board.metric_of(task) is not None for task in tasks)
    imported = [MC1_TASK if t == "harness|truthfulqa:mc|0" else t for t in tasks]
    assert sorted(canonical_name(t) for t in imported) == sorted(suite_benchmarks(board.suite))
    for other in ("harness|gsm8k|0", "harness|drop|3", "leaderboard_bbh", "leaderboard_math_hard"):
        assert board.metric_of(other) is None


def test_leaderboard_entries_are_validated():
    def document(benchmarks, suite_members=()):
        return {
            "categories": [{"name": c, "benchmarks": []} for c in taxonomy.CATEGORIES],
            "leaderboards": {"benchmarks": benchmarks, "suites": {"s": list(suite_members)}},
        }

    parsed = taxonomy._parse(document([{"name": "x", "category": "Math", "k": 3}], ["x"]))
    assert parsed.suites["s"] == ("x",) and not parsed.by_name["x"].paper
    with pytest.raises(ValueError, match="category"):
        taxonomy._parse(document([{"name": "x", "category": "Maths", "k": 3}]))
    with pytest.raises(ValueError, match="k must be"):
        taxonomy._parse(document([{"name": "x", "category": "Math", "k": 1}]))
    with pytest.raises(ValueError, match="names no benchmark"):
        taxonomy._parse(document([], ["y:*"]))
