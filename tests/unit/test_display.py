"""Sizes and times as people read them (forgetmap.core.display), and the store writing every
time in UTC whatever the machine's zone."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone

import pytest
from forgetmap.core.display import binary_size, utc_time


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 bytes"),
        (900, "900 bytes"),
        (1023, "1023 bytes"),
        (1024, "1 KiB"),
        (1536, "1.5 KiB"),
        (64 * 2**20, "64 MiB"),
        (8 * 2**30, "8 GiB"),  # FORGETMAP_IMPORT_MAX_BYTES' default, once "8,589,934,592 bytes"
        (3 * 2**40, "3 TiB"),
        (5 * 2**50, "5120 TiB"),  # no unit past TiB
    ],
)
def test_binary_size(n, text):
    assert binary_size(n) == text


def test_binary_size_refuses_a_negative_count():
    with pytest.raises(ValueError, match="not negative"):
        binary_size(-1)


def test_utc_time_names_the_zone_and_converts_other_zones():
    assert utc_time("2026-12-06T20:01:37.151991") == "2026-12-06 20:01:37 UTC"
    assert utc_time(datetime(2026, 12, 6, 20, 1, 37)) == "2026-12-06 20:01:37 UTC"
    berlin = timezone(timedelta(hours=1))
    assert utc_time(datetime(2026, 12, 6, 21, 1, 37, tzinfo=berlin)) == "2026-12-06 20:01:37 UTC"
    assert utc_time("2026-12-06T21:01:37+01:00") == "2026-12-06 20:01:37 UTC"
    assert utc_time(None) == utc_time("") == ""


def test_the_store_writes_times_in_utc_on_a_machine_in_another_zone(tmp_path):
    """A token's creation time, written by the database's now() on a machine set to Tokyo
    (UTC+9), reads back as UTC."""
    script = (
        "import sys\n"
        "from forgetmap.db import open_store\n"
        "from forgetmap.services.tokens import create_token, list_tokens\n"
        "store = open_store(sys.argv[1])\n"
        "with store.transaction() as conn:\n"
        "    create_token(conn, 'alice')\n"
        "with store.read() as conn:\n"
        "    print(list_tokens(conn)[0]['created_at'])\n"
        "store.close()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "t.duckdb")],
        capture_output=True,
        text=True,
        env={"TZ": "Asia/Tokyo", "PATH": ""},
        check=True,
    )
    written = datetime.fromisoformat(done.stdout.strip()).replace(tzinfo=UTC)
    assert abs(datetime.now(UTC) - written) < timedelta(minutes=5), done.stdout
