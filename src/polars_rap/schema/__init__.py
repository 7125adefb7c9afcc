"""The public schema: what each column may hold, and the frame <-> array encoding.

- :mod:`~polars_rap.schema.domain`: :class:`~polars_rap.schema.domain.Domain`, column declarations
  and their checks;
- :mod:`~polars_rap.schema.domain_tables`: the table form of a declaration (TOML, config files);
- :mod:`~polars_rap.schema.transforms`: a numeric column's public map onto ``[0, 1]`` (scale, atoms);
- :mod:`~polars_rap.schema.temporal`: dates, datetimes and durations as whole units;
- :mod:`~polars_rap.schema.encoding`: frames into the codes and numerics the kernels read.

Nothing here reads private values beyond a per-row map, and nothing here spends budget.
"""
