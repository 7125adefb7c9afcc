"""The fit: plan the budget (:mod:`~polars_rap.fit.strategy`, :mod:`~polars_rap.fit.planned_strategy`,
:mod:`~polars_rap.fit.planning`), then select, measure and project (:mod:`~polars_rap.fit.loop`,
:mod:`~polars_rap.fit.rounds`, :mod:`~polars_rap.fit.annealing`, :mod:`~polars_rap.fit.projection`).
The query families that plan steps of their own (base marginals, null rates, numeric histograms)
live here too.
"""
