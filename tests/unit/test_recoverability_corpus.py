"""Where a recoverability worker gets its documents: local corpus folders (and nowhere else), or a
Hugging Face dataset."""

from __future__ import annotations

import json

import pytest
from forgetmap.contract.recovery import CorpusIn
from forgetmap.worker.evaluate import ShardFailed
from forgetmap.worker.recoverability_job import read_documents

from tests.support.services import require_module


@pytest.fixture
def corpora(tmp_path):
    root = tmp_path / "corpora"
    (root / "web").mkdir(parents=True)
    (root / "web" / "a.jsonl").write_text(
        "\n".join(json.dumps({"text": f"doc {i}", "other": i}) for i in range(4)) + "\n\n"
    )
    (root / "web" / "b.txt").write_text("para one\n\npara two\n\n\n")
    (root / "web" / "ignored.csv").write_text("x\n")
    (root / "book.txt").write_text("a whole book")
    (tmp_path / "secret.txt").write_text("not yours")
    return root


def test_a_file_a_folder_and_max_docs(corpora):
    ids, texts = read_documents(CorpusIn(source="local:book.txt"), [corpora])
    assert ids == ["book.txt"] and texts == ["a whole book"]
    ids, texts = read_documents(CorpusIn(source="local:web", separator="\n\n"), [corpora])
    assert texts == ["doc 0", "doc 1", "doc 2", "doc 3", "para one", "para two"]
    assert ids[0] == "a.jsonl:1" and ids[-1] == "b.txt#1"
    ids, _ = read_documents(CorpusIn(source="local:web", max_docs=3), [corpora])
    assert len(ids) == 3


@pytest.mark.parametrize(
    "source, message",
    [
        ("local:../secret.txt", "outside the corpus folders"),
        ("local:missing.txt", "not found in the corpus folders"),
    ],
)
def test_paths_outside_or_missing_fail_clearly(corpora, source, message):
    with pytest.raises(ShardFailed, match=message):
        read_documents(CorpusIn(source=source), [corpora])


def test_symlink_out_of_the_folder_is_refused(corpora, tmp_path):
    (corpora / "link.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(ShardFailed, match="outside the corpus folders"):
        read_documents(CorpusIn(source="local:link.txt"), [corpora])


def test_no_folders_configured_or_a_bad_field(corpora):
    with pytest.raises(ShardFailed, match="no corpus folders configured"):
        read_documents(CorpusIn(source="local:book.txt"), [])
    with pytest.raises(ShardFailed, match="no string field 'body'"):
        read_documents(CorpusIn(source="local:web", text_field="body"), [corpora])


def test_hub_dataset(monkeypatch):
    datasets = require_module("datasets")
    calls = []

    def load_dataset(name, config, split):
        calls.append((name, config, split))
        return datasets.Dataset.from_dict({"content": ["first", "  ", "second", None]})

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    corpus = CorpusIn(
        source="hf:org/web", config="en", split="validation", max_docs=10, text_field="content"
    )
    ids, texts = read_documents(corpus, [])
    assert calls == [("org/web", "en", "validation[:10]")]
    assert texts == ["first", "second"] and ids == ["org/web:0", "org/web:1"]
    with pytest.raises(ShardFailed, match="has no column 'text'"):
        read_documents(corpus.model_copy(update={"text_field": "text"}), [])


def test_hub_unreachable_says_so(monkeypatch):
    datasets = require_module("datasets")

    def unreachable(name, config, split):  # what datasets raises without a network
        raise ConnectionError(f"Couldn't reach '{name}' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(datasets, "load_dataset", unreachable)
    with pytest.raises(ShardFailed, match="cannot load corpus no-such-org/no-such-set"):
        read_documents(CorpusIn(source="hf:no-such-org/no-such-set", max_docs=5), [])
