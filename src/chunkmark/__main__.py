"""``python -m chunkmark``: the command-line app."""

from chunkmark.cli.app import main

main()
