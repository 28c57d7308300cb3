"""The limits the docs state are the code's, one number each (issue 50): the body limits of
docs/api.md and the import caps of docs/formats.md are read from the constants that enforce them
(docs/settings.md's tables are written from the settings themselves: test_settings_docs.py), so
a changed number fails here until the page says it too."""

from __future__ import annotations

from pathlib import Path

import pytest
from forgetmap.importers import common, table
from forgetmap.services import imports
from forgetmap.web import limits, theory

DOCS = Path(__file__).resolve().parents[2] / "docs"


def page(name: str) -> str:
    return (DOCS / name).read_text()


def binary_size(n: int) -> str:
    """How the docs write a byte count that is a whole number of KiB or MiB."""
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n % size == 0:
            return f"{n // size} {unit}"
    return f"{n:,} bytes"


@pytest.mark.parametrize(
    "limit", [limits.WORKER_UPLOAD_MAX_BYTES, limits.JSON_MAX_BYTES, limits.FORM_MAX_BYTES]
)
def test_the_api_page_states_each_body_limit(limit):
    limits_section = page("api.md").split("## Limits", 1)[1].split("\n## ", 1)[0]
    assert f"{binary_size(limit)} ({limit:,} bytes)" in limits_section


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MAX_TABLE_COLUMNS", f"{table.MAX_TABLE_COLUMNS:,}"),
        ("MAX_HEADER_BYTES", binary_size(table.MAX_HEADER_BYTES)),
        ("MAX_LINE_BYTES", binary_size(common.MAX_LINE_BYTES)),
        ("MAX_PARQUET_FOOTER_BYTES", binary_size(table.MAX_PARQUET_FOOTER_BYTES)),
        ("MAX_JSON_DEPTH", f"{common.MAX_JSON_DEPTH} levels"),
        ("NUM_CHOICES_MAX", f"{table.NUM_CHOICES_MAX:,}"),
    ],
)
def test_the_formats_page_states_each_import_cap(name, value):
    row = next(line for line in page("formats.md").splitlines() if f"(`{name}`)" in line)
    assert row.split("|")[2].strip() == value


def test_the_unpack_caps_are_stated_where_uploads_are():
    for name in ("settings.md", "api.md"):
        text = page(name)
        assert f"more than {imports.MAX_UNPACK_RATIO} times" in text
        assert f"{imports.MAX_MEMBERS:,} members" in text


def test_the_theory_lab_bound_is_stated():
    text = page("api.md")
    assert f"**{theory.ANONYMOUS_LAB_REQUESTS}** requests at once without a login" in text
    assert f"**{theory.IDENTIFIED_LAB_REQUESTS}** with one" in text
