"""Curator-side evaluation (reads the real rows, so **not** private): workload errors
(:mod:`~polars_rap.quality.evaluation`), ML utility (:mod:`~polars_rap.quality.ml_utility`)
and the quality report (:mod:`~polars_rap.quality.report`, :mod:`~polars_rap.quality.stats`,
:mod:`~polars_rap.quality.render`).
"""

from polars_rap.quality.report import QualityReport, quality_report

__all__ = ["QualityReport", "quality_report"]
