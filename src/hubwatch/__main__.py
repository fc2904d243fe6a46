"""Entry point for `python -m hubwatch`."""

from hubwatch.cli import main

main()
