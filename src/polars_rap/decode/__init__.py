"""Relaxed rows to typed rows (:mod:`~polars_rap.decode.decoding`), and what decoding may use of
the release: the coupling of numeric columns (:mod:`~polars_rap.decode.numeric_coupling`), the
numeric ties and their pairs (:mod:`~polars_rap.decode.numeric_ties`,
:mod:`~polars_rap.decode.numeric_pairs`, :mod:`~polars_rap.decode.tie_ridge`) and the released
histograms (:mod:`~polars_rap.decode.histogram_margins`). Post-processing, except the ties'
release, which is charged in :mod:`~polars_rap.decode.numeric_ties`.
"""
