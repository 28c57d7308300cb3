"""The benchmark taxonomy (app/core/taxonomy.py + app/core/taxonomy.yaml) against paper_suite.md."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from forgetmap.core import taxonomy
from forgetmap.core.taxonomy import (
    CATEGORIES,
    NOT_SCORED,
    UNCATEGORIZED,
    BenchmarkInfo,
    canonical_name,
    category_for,
    is_scored,
    lookup,
)

not_scored_benchmarks = taxonomy.not_scored_benchmarks
scored_benchmarks = taxonomy.scored_benchmarks
usual_num_choices = taxonomy.usual_num_choices

EXPECTED_COUNTS = {
    "Commonsense": 2,
    "Culture": 2,
    "Logic": 20,
    "Knowledge/QA": 4,
    "Language": 7,
    "Liberal Arts": 19,
    "Math": 9,
    "Safety/Truth": 6,
    "Science/Tech": 25,
}


def test_exactly_94_scored_unique():
    names = [b.name for b in scored_benchmarks()]
    assert len(names) == 94
    assert len(set(names)) == 94


def test_categories_in_display_order():
    assert CATEGORIES == (
        "Commonsense",
        "Culture",
        "Logic",
        "Knowledge/QA",
        "Language",
        "Liberal Arts",
        "Math",
        "Safety/Truth",
        "Science/Tech",
    )
    assert UNCATEGORIZED == "Uncategorized"
    # YAML order follows category display order
    order = [CATEGORIES.index(b.category) for b in scored_benchmarks()]
    assert order == sorted(order)


def test_per_category_counts():
    counts = Counter(b.category for b in scored_benchmarks())
    assert dict(counts) == EXPECTED_COUNTS
    assert sum(EXPECTED_COUNTS.values()) == 94


def test_family_coverage():
    names = {b.name for b in scored_benchmarks()}
    assert sum(n.startswith("mmlu:") for n in names) == 57  # all of MMLU
    assert sum(n.startswith("bbh:") for n in names) == 24  # 27 BBH tasks minus 3 generative
    assert sum(n.startswith("musr:") for n in names) == 3
    assert {
        "arc:easy",
        "arc:challenge",
        "gpqa:diamond",
        "truthfulqa:mc1",
        "salad_bench:mrq",
    } <= names
    assert {"commonsense_qa", "piqa", "social_iqa", "hellaswag", "mctest"} <= names


@pytest.mark.parametrize(
    ("name", "k"),
    [
        ("piqa", 2),
        ("social_iqa", 3),
        ("commonsense_qa", 5),
        ("mmlu:anatomy", 4),
        ("bbh:geometric_shapes", None),
        ("bbh:object_counting", 19),
        ("bbh:reasoning_about_colored_objects", None),
        ("bbh:tracking_shuffled_objects_seven_objects", 7),
        ("bbh:logical_deduction_three_objects", 3),
        ("bbh:penguins_in_a_table", None),
        ("bbh:movie_recommendation", None),
        ("bbh:disambiguation_qa", None),
        ("bbh:navigate", 2),
        # BBH tasks whose real items show varying option counts claim no single k
        ("bbh:ruin_names", None),
        ("bbh:date_understanding", None),
        ("bbh:salient_translation_error_detection", 6),
        ("bbh:temporal_sequences", 4),
        ("arc:challenge", 4),
        ("hellaswag", 4),
        ("gpqa:diamond", 4),
        ("mctest", 4),
        ("musr:team_allocation", None),
        ("musr:murder_mysteries", None),
        ("truthfulqa:mc1", None),
        ("salad_bench:mrq", None),
        # through other spellings
        ("siqa", 3),
        ("bbh_cot_fewshot_geometric_shapes", None),
        # unknown
        ("mmlu_redux", None),
        ("my_private_eval", None),
    ],
)
def test_usual_num_choices(name, k):
    assert usual_num_choices(name) == k


def test_k_values_are_valid():
    for b in scored_benchmarks():
        assert b.num_choices is None or (isinstance(b.num_choices, int) and b.num_choices >= 2)
    varying = {b.name for b in scored_benchmarks() if b.num_choices is None}
    assert varying == {
        "musr:murder_mysteries",
        "musr:object_placements",
        "musr:team_allocation",
        "truthfulqa:mc1",
        "salad_bench:mrq",
        "bbh:ruin_names",
        "bbh:movie_recommendation",
        "bbh:geometric_shapes",
        "bbh:reasoning_about_colored_objects",
        "bbh:date_understanding",
        "bbh:disambiguation_qa",
        "bbh:penguins_in_a_table",
    }
    assert {b.num_choices for b in scored_benchmarks() if b.name.startswith("mmlu:")} == {4}


def test_sources():
    assert all(b.source for b in scored_benchmarks())
    assert lookup("mmlu:anatomy").source == "lighteval/mmlu"
    assert lookup("bbh:navigate").source == "lighteval/big_bench_hard"
    assert lookup("gpqa:diamond").source == "Idavidrein/gpqa"
    assert lookup("hellaswag").source == "hellaswag"
    assert lookup("social_iqa").source == "allenai/social_i_qa"


def test_benchmark_info_is_frozen():
    info = lookup("piqa")
    assert info == BenchmarkInfo("piqa", "Commonsense", 2, "ybisk/piqa")
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.name = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # lighteval task strings
        ("leaderboard|mmlu:world_religions|5", "mmlu:world_religions"),
        ("lighteval|bbh:navigate|3", "bbh:navigate"),
        ("lighteval|arc:easy|0", "arc:easy"),
        ("leaderboard|arc:challenge|25", "arc:challenge"),
        ("lighteval|bbh:navigate", "bbh:navigate"),
        ("lighteval|gpqa:diamond|0", "gpqa:diamond"),
        ("lighteval|musr:team_allocation|0", "musr:team_allocation"),
        ("leaderboard|hellaswag|10", "hellaswag"),
        ("lighteval|bigbench_hard:causal_judgment|0", "bbh:causal_judgment"),
        ("helm|siqa|0", "social_iqa"),
        ("lighteval|mmlu:anatomy|0|0", "mmlu:anatomy"),
        # canonical names
        ("mmlu:world_religions", "mmlu:world_religions"),
        (
            "bbh:tracking_shuffled_objects_three_objects",
            "bbh:tracking_shuffled_objects_three_objects",
        ),
        ("bbh:logical_deduction_five_objects", "bbh:logical_deduction_five_objects"),
        ("commonsense_qa", "commonsense_qa"),
        ("piqa", "piqa"),
        ("mctest", "mctest"),
        ("salad_bench:mrq", "salad_bench:mrq"),
        # lm-eval-harness MMLU
        ("mmlu_world_religions", "mmlu:world_religions"),
        ("mmlu_flan_cot_zeroshot_anatomy", "mmlu:anatomy"),
        ("mmlu_flan_cot_fewshot_anatomy", "mmlu:anatomy"),
        ("mmlu_flan_n_shot_generative_college_physics", "mmlu:college_physics"),
        ("mmlu_flan_n_shot_loglikelihood_philosophy", "mmlu:philosophy"),
        ("mmlu_continuation_anatomy", "mmlu:anatomy"),
        ("mmlu_anatomy_generative", "mmlu:anatomy"),
        ("mmlu_high_school_us_history", "mmlu:high_school_us_history"),
        # lm-eval-harness BBH
        ("bbh_navigate", "bbh:navigate"),
        ("bbh_cot_fewshot_navigate", "bbh:navigate"),
        ("bbh_cot_zeroshot_navigate", "bbh:navigate"),
        ("bbh_fewshot_navigate", "bbh:navigate"),
        ("bbh_zeroshot_navigate", "bbh:navigate"),
        ("leaderboard_bbh_navigate", "bbh:navigate"),
        ("bbh_cot_fewshot_causal_judgement", "bbh:causal_judgment"),
        ("leaderboard_bbh_causal_judgement", "bbh:causal_judgment"),
        (
            "bbh_zeroshot_tracking_shuffled_objects_seven_objects",
            "bbh:tracking_shuffled_objects_seven_objects",
        ),
        # other lm-eval-harness tasks
        ("arc_easy", "arc:easy"),
        ("arc_challenge", "arc:challenge"),
        ("leaderboard_musr_murder_mysteries", "musr:murder_mysteries"),
        ("leaderboard_musr_object_placements", "musr:object_placements"),
        ("truthfulqa_mc1", "truthfulqa:mc1"),
        ("gpqa_diamond_zeroshot", "gpqa:diamond"),
        ("gpqa_diamond_cot_zeroshot", "gpqa:diamond"),
        ("gpqa_diamond_n_shot", "gpqa:diamond"),
        ("leaderboard_gpqa_diamond", "gpqa:diamond"),
        ("social_iqa", "social_iqa"),
        ("siqa", "social_iqa"),
        ("commonsenseqa", "commonsense_qa"),
        ("hellaswag", "hellaswag"),
        # case and whitespace
        ("  MMLU_World_Religions ", "mmlu:world_religions"),
        ("Leaderboard|MMLU:Anatomy|5", "mmlu:anatomy"),
        ("ARC_Easy", "arc:easy"),
        ("PIQA", "piqa"),
        # not-scored tasks are canonicalized too (but stay unscored)
        ("bbh_cot_fewshot_dyck_languages", "bbh:dyck_languages"),
        ("truthfulqa_mc2", "truthfulqa:mc2"),
        ("leaderboard_ifeval", "ifeval"),
    ],
)
def test_canonical_name_maps(raw, expected):
    assert canonical_name(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "mmlu_redux",
        "leaderboard_mmlu_redux",
        "mmlu_pro_philosophy",
        "mmlu",
        "mmlu_stem",
        "mmlu:not_a_subject",
        "global_mmlu_en_anatomy",
        "cmmlu_anatomy",
        "bbh",
        "bbh_foo_unknown",
        "bbh_cot_fewshot_foo_unknown",
        "bigbench_causal_judgment_multiple_choice",
        "bigbench:causal_judgment",
        "arc_challenge_mt_de",
        "truthfulqa_gen",
        "leaderboard_math_hard",
        "hellaswag_de",
        "lighteval|truthfulqa:mc|0",
        "lighteval|foo|0",
        "My Private Eval",
        "",
    ],
)
def test_canonical_name_leaves_unknown_unchanged(raw):
    assert canonical_name(raw) == raw
    assert canonical_name(f"  {raw}\t") == raw
    assert not is_scored(raw)


def test_every_scored_name_is_its_own_canonical_name():
    for b in scored_benchmarks():
        assert canonical_name(b.name) == b.name
        assert canonical_name(b.name.upper()) == b.name
        assert lookup(b.name) == b


def test_lookup():
    info = lookup("leaderboard_bbh_navigate")
    assert info is not None
    assert (info.name, info.category, info.num_choices) == ("bbh:navigate", "Logic", 2)
    assert lookup("arc_challenge").category == "Logic"  # not lost in a hidden category
    assert lookup("mmlu_redux") is None
    assert lookup("bbh:dyck_languages") is None


@pytest.mark.parametrize(
    ("name", "given", "expected"),
    [
        # the taxonomy wins for benchmarks it knows
        ("mmlu_world_religions", None, "Liberal Arts"),
        ("mmlu:anatomy", "Medicine", "Science/Tech"),
        ("lighteval|bbh:sports_understanding|3", "", "Culture"),
        ("truthfulqa_mc1", None, "Safety/Truth"),
        ("gpqa_diamond_zeroshot", "whatever", "Science/Tech"),
        ("hellaswag", None, "Language"),
        ("piqa", None, "Commonsense"),
        ("bbh_object_counting", None, "Knowledge/QA"),
        ("mmlu_econometrics", None, "Math"),
        # unknown benchmarks keep the given category, stripped
        ("my_eval", "Coding", "Coding"),
        ("mmlu_redux", "  Knowledge  ", "Knowledge"),
        # ... or fall back to Uncategorized
        ("my_eval", None, UNCATEGORIZED),
        ("my_eval", "", UNCATEGORIZED),
        ("my_eval", "   ", UNCATEGORIZED),
        # not-scored tasks get a column of their own (kept out of Total), whatever is given
        ("bbh_dyck_languages", None, NOT_SCORED),
        ("ifeval", "Instruction following", NOT_SCORED),
        ("community|ifeval_reasoning|0", None, NOT_SCORED),
    ],
)
def test_category_for(name, given, expected):
    assert category_for(name, given) == expected


@pytest.mark.parametrize(
    "name",
    [
        "bbh:dyck_languages",
        "bbh:word_sorting",
        "bbh:multistep_arithmetic_two",
        "truthfulqa:mc2",
        "ifeval",
        "bbh_cot_fewshot_dyck_languages",
        "leaderboard_bbh_word_sorting",
        "truthfulqa_mc2",
        "leaderboard_ifeval",
        "lighteval|ifeval|0",
    ],
)
def test_not_scored(name):
    assert not is_scored(name)
    assert lookup(name) is None
    assert usual_num_choices(name) is None


def test_not_scored_list():
    assert set(not_scored_benchmarks()) == {
        "bbh:dyck_languages",
        "bbh:word_sorting",
        "bbh:multistep_arithmetic_two",
        "truthfulqa:mc2",
        "ifeval",
    }
    scored = {b.name for b in scored_benchmarks()}
    assert scored.isdisjoint(not_scored_benchmarks())


@pytest.mark.parametrize("name", ["piqa", "siqa", "mmlu_anatomy", "lighteval|arc:easy|0"])
def test_is_scored(name):
    assert is_scored(name)


def test_yaml_is_validated():
    good = {
        "categories": [{"name": c, "benchmarks": []} for c in CATEGORIES],
        "not_scored": [],
    }
    taxonomy._parse(good)  # an empty but well-formed taxonomy parses
    bad_order = {"categories": [{"name": c, "benchmarks": []} for c in reversed(CATEGORIES)]}
    with pytest.raises(ValueError, match="categories"):
        taxonomy._parse(bad_order)
    bad_k = {
        "categories": [
            {"name": c, "benchmarks": [{"name": "x", "k": 1}] if i == 0 else []}
            for i, c in enumerate(CATEGORIES)
        ]
    }
    with pytest.raises(ValueError, match="k must be"):
        taxonomy._parse(bad_k)
    dup = {
        "categories": [
            {"name": c, "benchmarks": [{"name": "x", "k": 2}] if i < 2 else []}
            for i, c in enumerate(CATEGORIES)
        ]
    }
    with pytest.raises(ValueError, match="twice"):
        taxonomy._parse(dup)


PAPER_TASKS = [
    ("community|mmlu_reasoning_letter:anatomy|0", "mmlu:anatomy", "Science/Tech"),
    ("community|bbh_reasoning_letter:navigate|0", "bbh:navigate", "Logic"),
    ("community|bbh_reasoning_letter:causal_judgement|0", "bbh:causal_judgment", "Logic"),
    ("community|arc_reasoning_custom_prompt_letter:easy|0", "arc:easy", "Logic"),
    ("community|arc_reasoning_custom_prompt_letter:challenge|0", "arc:challenge", "Logic"),
    ("community|musr_reasoning_letter:murder_mysteries|0", "musr:murder_mysteries", "Logic"),
    ("community|commonsense_qa_reasoning_letter:main|0", "commonsense_qa", "Commonsense"),
    ("community|piqa_reasoning_letter:main|0", "piqa", "Commonsense"),
    ("community|social_iqa_reasoning_letter:main|0", "social_iqa", "Language"),
    ("community|hellaswag_reasoning_letter:main|0", "hellaswag", "Language"),
    ("community|mctest_reasoning_letter:main|0", "mctest", "Knowledge/QA"),
    ("community|gpqa_reasoning_letter:diamond|0", "gpqa:diamond", "Science/Tech"),
    ("community|truthfulqa_reasoning_letter:mc1|0", "truthfulqa:mc1", "Safety/Truth"),
    ("community|salad_bench_reasoning_letter:mrq|0", "salad_bench:mrq", "Safety/Truth"),
    ("community|bbh_reasoning_letter:dyck_languages|0", "bbh:dyck_languages", NOT_SCORED),
    ("community|ifeval_reasoning|0", "ifeval", NOT_SCORED),
]


@pytest.mark.parametrize(("task", "canonical", "category"), PAPER_TASKS)
def test_paper_task_names(task, canonical, category):
    assert canonical_name(task) == canonical
    assert category_for(task, None) == category


def test_every_scored_benchmark_has_a_paper_task_name():
    """The paper's names for all 94 scored benchmarks resolve (MMLU and BBH by subset)."""
    for info in scored_benchmarks():
        family, _, subset = info.name.partition(":")
        if family == "arc":
            task = f"community|arc_reasoning_custom_prompt_letter:{subset}|0"
        else:
            task = f"community|{family}_reasoning_letter:{subset or 'main'}|0"
        assert canonical_name(task) == info.name, task
