"""`forgetmap pair suggest`: pairs proposed from model cards in the local hub cache (the real
huggingface_hub reading its own cache layout, offline) and from names; accepted by number or all;
both ways (on the file, and through a running app)."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import cli_both_ways

cli = cli_both_ways()

MODELS = ["org/Base-7B", "org/Base-7B-Instruct", "org/Base-7B-DPO", "org/Other-1B",
          "lab/tuned-model", "lab/unrelated"]  # fmt: skip


def write_card(cache, repo: str, base_model) -> None:
    """A model card in huggingface_hub's cache layout: refs/main names the snapshot's commit."""
    folder = cache / f"models--{repo.replace('/', '--')}"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(commit)
    snapshot = folder / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "README.md").write_text(
        f"---\nbase_model: {json.dumps(base_model)}\nlicense: mit\n---\n# {repo}\n"
    )


@pytest.fixture
def stored(cli, tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    write_card(cache, "lab/tuned-model", "org/Other-1B")
    write_card(cache, "org/Base-7B-Instruct", ["org/Base-7B"])
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    lines = ["model,benchmark,sample_id,correct"]
    lines += [
        f"{m},mmlu:anatomy,q{i},{(i + n) % 2}" for n, m in enumerate(MODELS) for i in range(4)
    ]
    (tmp_path / "rows.csv").write_text("\n".join(lines) + "\n")
    cli("import", "table", tmp_path / "rows.csv")
    return cli


def test_suggestions_name_their_evidence_and_are_accepted(stored):
    rows = stored.json("pair", "suggest", "--format", "json")
    assert [(r["base"], r["post"], r["evidence"], r["stage"]) for r in rows] == [
        ("org/Base-7B", "org/Base-7B-Instruct", ["model card", "name"], "instruct"),
        ("org/Other-1B", "lab/tuned-model", ["model card"], None),
        ("org/Base-7B", "org/Base-7B-DPO", ["name"], "rl"),
    ]
    table = stored("pair", "suggest").stdout
    assert "model card, name" in table and "--accept all" in table

    out = stored("pair", "suggest", "--accept", "2").stdout
    assert "added pair 1: org/Other-1B -> lab/tuned-model" in out
    # id, base id, post id, label, stage, created: the label says which; a card says no stage
    assert [p[3:5] for p in stored.contents()["pairs"]] == [("Other-1B -> tuned-model", None)]
    left = stored.json("pair", "suggest", "--format", "json")
    assert [r["post"] for r in left] == ["org/Base-7B-Instruct", "org/Base-7B-DPO"]

    out = stored("pair", "suggest", "--accept", "all").stdout
    assert "added pair 2: org/Base-7B -> org/Base-7B-Instruct" in out
    assert "added pair 3: org/Base-7B -> org/Base-7B-DPO" in out
    assert sorted(p[3:5] for p in stored.contents()["pairs"]) == [
        ("Base-7B -> Base-7B-DPO", "rl"), ("Base-7B -> Base-7B-Instruct", "instruct"),
        ("Other-1B -> tuned-model", None),
    ]  # fmt: skip
    assert "no pairs to suggest" in stored("pair", "suggest").stdout


@pytest.mark.parametrize(
    ("accept", "message"),
    [("9", "--accept: no suggestion 9 (there are 3)"),
     ("one", "--accept takes 'all' or numbers like 1,3, got 'one'")],
)  # fmt: skip
def test_a_wrong_accept_is_one_line_and_adds_nothing(stored, accept, message):
    result = stored("pair", "suggest", "--accept", accept, ok=False)
    assert result.exit_code != 0 and message in result.stderr
    assert stored.contents()["pairs"] == []
