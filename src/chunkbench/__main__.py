"""``python -m chunkbench``: the command-line app."""

from chunkbench.cli.app import main

main()
