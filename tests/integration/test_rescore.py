"""`forgetmap rescore` end to end on a real DuckDB file: answers imported with `import table`
(one long enough to live in the answer files beside the database), graded again by `lenient` and
`math`; the harness's `results` stay as they were and the score set holds exactly the rows
expected, by hand."""

from __future__ import annotations

import json

from tests.support.cli import Cli, cli_both_ways
from tests.support.tables import write_csv

cli = cli_both_ways()  # on the file, then through a real serve that owns it

CAPITALS = ["London", "Paris", "Berlin", "Madrid"]
LONG = (
    "Let me think about each city in turn. London is the capital of the United Kingdom, so it "
    "cannot be the capital of Spain. Paris is the capital of France, which borders Spain but is "
    "a different country. Berlin is the capital of Germany. That leaves the last city, which is "
    "in the middle of the Iberian peninsula and has been the seat of the Spanish crown since "
    "1561.\n\nSo the answer is D."
)
assert len(LONG.encode()) > 256  # stored in the import's answer file, not in its row

# sample, response, gold, the harness's correct; then what lenient finds: prediction, correct,
# status, rule (None: the row is skipped)
MC = [
    (
        "q0",
        "Berlin has been Germany's capital since 1990.\n\n**Answer: (C)**",
        "Berlin",
        0,
        ("C", True, "answered", "statement"),
    ),
    ("q1", "The correct option is B.", "Paris", 1, ("B", True, "answered", "statement")),
    ("q2", "It depends on the specific numbers.", "Paris", 0, (None, False, "no_answer", None)),
    ("q3", LONG, "Madrid", 0, ("D", True, "answered", "statement")),
    ("q4", "Thinking about the rivers...\nB", "London", 1, ("B", False, "answered", "bare_line")),
    ("q5", 'The city on the Spree: "Berlin".', "Berlin", 1, ("C", True, "answered", "option_text")),
    ("q6", "I'm sorry, but I can't help with that.", "Paris", 0, (None, False, "refused", None)),
    ("q7", "", "Paris", 1, None),  # no response
    ("q8", "[-1.5,-0.25,-3,-4]", "Paris", 1, None),  # a log-likelihood choice
    # cut off at the token limit (the file says so): nothing found, and the status says why
    (
        "q9",
        "Let me recall the capitals one by one. The first",
        "Madrid",
        0,
        (None, False, "truncated", None),
    ),
]
MATH = [
    ("g0", "The probability is $\\boxed{\\frac{1}{2}}$.", "0.5", 0, ("\\frac{1}{2}", True)),
    ("g1", "8 + 4 = 12, so the answer is 12.", "12", 1, ("12", True)),
    ("g2", "The answer is 70.", "72", 1, ("70", False)),
    ("g3", "It depends on the specific numbers.", "3", 0, (None, False)),
]


def _rows() -> list[dict]:
    rows = [
        {
            "model": "chat-7b",
            "benchmark": "mmlu_anatomy",
            "sample_id": s,
            "seed": 0,
            "correct": c,
            "num_choices": 4,
            "category": "",
            "response": r,
            "gold": g,
            "choices": json.dumps(CAPITALS),
            "truncated": int(s == "q9"),
        }
        for s, r, g, c, _ in MC
    ]
    rows += [
        {
            "model": "chat-7b",
            "benchmark": "toy_arith",
            "sample_id": s,
            "seed": 0,
            "correct": c,
            "num_choices": "",
            "category": "Math",
            "response": r,
            "gold": g,
            "choices": "",
            "truncated": "",
        }
        for s, r, g, c, _ in MATH
    ]
    return rows


def _loaded(cli, tmp_path):
    write_csv(tmp_path / "chat.csv", _rows())
    cli("import", "table", tmp_path / "chat.csv")
    return cli.contents()


def _set_rows(contents: dict, name: str) -> dict[str, tuple]:
    """The rows of the score set ``name`` by sample id: (prediction, correct, status, rule)."""
    (set_id,) = [row[0] for row in contents["score_sets"] if row[1] == name]
    return {r[4]: r[5:] for r in contents["rescored"] if r[0] == set_id}


def test_lenient_rescoring_keeps_the_harness_scores_and_writes_the_set(cli, tmp_path):
    before = _loaded(cli, tmp_path)
    out = cli("rescore", "lenient-v1", "--extractor", "lenient").stdout
    assert (
        "wrote score set lenient-v1 (lenient): 8 answers graded, 3 changed against the "
        "harness (2 now right, 1 now wrong), 3 with no answer" in out
    )
    assert "rules: bare_line 1, none 3, option_text 1, statement 3" in out
    assert "skipped: loglikelihood 1, no_response 1, other_kind 4" in out

    after = cli.contents()
    assert after["results"] == before["results"]  # the harness's own scores, untouched
    assert after["text_files"] == before["text_files"]
    expected = {sample: found for sample, _, _, _, found in MC if found is not None}
    assert _set_rows(after, "lenient-v1") == expected
    (row,) = after["score_sets"]
    assert (row[1], row[2], row[4]) == ("lenient-v1", "lenient", 8)

    harness = {r[3]: r[5] for r in after["results"]}
    changed = {s for s, (_, correct, _, _) in expected.items() if correct != harness[s]}
    assert changed == {"q0", "q3", "q4"}


def test_a_set_is_written_again_only_with_replace(cli, tmp_path):
    _loaded(cli, tmp_path)
    cli("rescore", "mine", "--extractor", "lenient")
    again = cli("rescore", "mine", "--extractor", "math", ok=False)
    assert again.exit_code == 2
    assert "score set mine exists (extractor lenient); --replace writes it again" in again.stderr

    out = cli("rescore", "mine", "--extractor", "math", "--replace").stdout
    assert (
        "replaced score set mine (math): 4 answers graded, 2 changed against the harness "
        "(1 now right, 1 now wrong), 1 with no answer" in out
    )
    assert "skipped: other_kind 10" in out
    contents = cli.contents()
    assert len(contents["score_sets"]) == 1 and contents["score_sets"][0][2] == "math"
    assert _set_rows(contents, "mine") == {
        sample: (
            prediction,
            correct,
            "answered" if prediction else "no_answer",
            "math_verify" if prediction else None,
        )
        for sample, _, _, _, (prediction, correct) in MATH
    }

    listing = cli("scores").stdout
    assert listing.splitlines()[0].split() == ["name", "extractor", "rows", "created"]
    assert listing.splitlines()[1].split()[:3] == ["mine", "math", "4"]


def test_choosing_models_and_benchmarks_and_refusing_unknown_names(cli, tmp_path):
    _loaded(cli, tmp_path)
    out = cli(
        "rescore",
        "anatomy",
        "--extractor",
        "lenient",
        "--benchmark",
        "mmlu_anatomy",
        "--model",
        "chat-7b",
    ).stdout
    assert "8 answers graded" in out and "other_kind" not in out

    for args, message in [
        (("--extractor", "nope"), "no extractor 'nope': choose among lenient, math"),
        (("--extractor", "lenient", "--model", "ghost"), "no model named 'ghost'"),
        (("--extractor", "lenient", "--benchmark", "ghost"), "no benchmark named 'ghost'"),
    ]:
        refused = cli("rescore", "other", *args, ok=False)
        assert refused.exit_code == 2 and message in refused.stderr, refused.stderr
    assert [row[1] for row in cli.contents()["score_sets"]] == ["anatomy"]  # nothing else written


def test_small_batches_write_the_same_set(tmp_path):
    from forgetmap.db import open_store
    from forgetmap.db.scores import rescored_rows
    from forgetmap.services.rescore import rescore

    local = Cli(tmp_path / "fm.duckdb")
    _loaded(local, tmp_path)
    store = open_store(local.db)
    try:
        whole = rescore(store, "whole", "lenient")
        batched = rescore(store, "batched", "lenient", batch_rows=2)
        with store.read() as conn:
            assert rescored_rows(conn, "whole") == rescored_rows(conn, "batched")
            assert len(rescored_rows(conn, "whole")) == 8
    finally:
        store.close()
    assert (whole.scored, whole.changed, whole.rules, whole.skipped) == (
        batched.scored,
        batched.changed,
        batched.rules,
        batched.skipped,
    )
