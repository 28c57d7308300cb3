"""common.json_objects: the JSON-lines reading both the table and the lm-eval importers use."""

from __future__ import annotations

from pathlib import Path

import pytest
from forgetmap.importers.common import InputError, json_objects


def test_objects_with_their_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes('\ufeff{"a": 1}\n\n  \n{"a": "é"}\n'.encode())
    assert list(json_objects(path, "rows.jsonl")) == [(1, {"a": 1}), (4, {"a": "é"})]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"a": 1}\n{"a": "\xff"}\n', r"^f: line 2 is not UTF-8 \(invalid start byte at byte 7\)"),
        (b'{"a": 1}\n{"a": }\n', r"^f: line 2 is not valid JSON \(Expecting value at column 7\)"),
        (b"[1, 2]\n", r"^f: line 1 is not a JSON object \(got list\)$"),
    ],
)
def test_bad_lines_name_the_file_and_line(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(data)
    with pytest.raises(InputError, match=message):
        list(json_objects(path, "f"))
