from forgetmap.cli import run

run()
