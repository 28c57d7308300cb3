"""``python -m app.cli``: the same as the ``forgetmap`` console script."""

from app.cli import main

main()
