"""The command line (:mod:`~polars_rap.cli.commands`: ``polars-rap``) and its config files
(:mod:`~polars_rap.cli.config`, :mod:`~polars_rap.cli.template`).
"""

from polars_rap.cli.commands import main

__all__ = ["main"]
