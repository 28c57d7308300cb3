"""Errors shared across layers (a leaf module: imports nothing from the app)."""


class InputError(ValueError):
    """Bad user input: the message says what is wrong and how to fix it, in one line."""
