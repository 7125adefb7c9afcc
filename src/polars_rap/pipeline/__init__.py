""":func:`~polars_rap.pipeline.synthesis.synthesize`, the one place the stages are wired in order,
with its argument checks (:mod:`~polars_rap.pipeline.arguments`), the release it returns
(:mod:`~polars_rap.pipeline.release`, :mod:`~polars_rap.pipeline.result`) and the saved model
(:mod:`~polars_rap.pipeline.model`).
"""
