"""Numbers and times as a person reads them, for pages and the command line alike (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

_BINARY_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB")


def binary_size(n: int) -> str:
    """A byte count as people say it: ``8 GiB``, ``1.5 MiB``, ``900 bytes`` (powers of 1,024;
    one decimal where the size is not a whole number of its unit)."""
    if n < 0:
        raise ValueError(f"a size is not negative: {n}")
    size, unit = float(n), 0
    while size >= 1024 and unit < len(_BINARY_UNITS) - 1:
        size, unit = size / 1024, unit + 1
    text = f"{size:.0f}" if unit == 0 or size == int(size) else f"{size:.1f}"
    return f"{text} {_BINARY_UNITS[unit]}"


def utc_time(value: datetime | str | None) -> str:
    """A stored time with its zone, to the second: ``2026-12-06 20:01:37 UTC``. The store writes
    every time in UTC (forgetmap.db.store), so a time without a zone is UTC; one that carries
    another zone is converted."""
    if value is None or value == "":
        return ""
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S") + " UTC"
