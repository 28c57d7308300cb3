"""Analysis helpers (theory lab and friends)."""
