"""`python -m memvault` runs the command line."""

from memvault.cli import cli

cli()
