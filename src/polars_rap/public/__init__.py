"""A public table as a prior: read and checked (:mod:`~polars_rap.public.prior`), a label model
(:mod:`~polars_rap.public.labels`), and the uses that may release its rows re-weighted toward the
private table (:mod:`~polars_rap.public.release`, :mod:`~polars_rap.public.reweight`,
:mod:`~polars_rap.public.margins`, :mod:`~polars_rap.public.tilt`).
"""
