"""``python -m polars_rap.cli``: the ``polars-rap`` command without its console script."""

from polars_rap.cli.commands import main

raise SystemExit(main())
