"""Reading and writing rows: the one pass over the input (:mod:`~polars_rap.io.source`,
:mod:`~polars_rap.io.engines`), on a Ray cluster (:mod:`~polars_rap.io.ray_engine`,
:mod:`~polars_rap.io.ray_parquet`), output in Parquet blocks (:mod:`~polars_rap.io.blocks`) and
the bundled tasks (:mod:`~polars_rap.io.datasets`).
"""
