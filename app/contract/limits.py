"""The ranges every entry point shares, in plain Python: an id and a seed. Kept apart from ``base``
so that a command that only checks a seed (``forgetmap import --seed``, a table's seed column) does
not import pydantic."""

from __future__ import annotations

MAX_ID = 2**31 - 1  # ids, seeds and counts are INTEGER columns
MIN_SEED, MAX_SEED = 0, MAX_ID  # a seed numbers a run, from 0; stored in an INTEGER column


def seed_problem(seed: int, where: str = "seed") -> str | None:
    """What is wrong with a seed, in one line, or None: the one rule of every entry point that takes
    a seed (`forgetmap import --seed`, the upload route's ``seed``, a table's seed column; a job's
    seeds are ``forgetmap.contract.jobs.Seed``, the same range)."""
    if MIN_SEED <= seed <= MAX_SEED:
        return None
    # a 5,000-digit number is not printed back (Python refuses to print past 4,300 digits)
    shown = str(seed) if abs(seed) < 10**30 else "a number of more than 30 digits"
    return f"{where} must be between {MIN_SEED} and {MAX_SEED}, got {shown}"
