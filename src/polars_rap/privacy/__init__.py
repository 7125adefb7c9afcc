"""Every step that touches private values and releases something, and its accounting.

- :mod:`~polars_rap.privacy.ledger`: the zCDP ledger, the Gaussian and exponential (Gumbel top-K)
  mechanisms; :mod:`~polars_rap.privacy.accounting`: ε, δ <-> ρ;
- :mod:`~polars_rap.privacy.samplers`: exact discrete Gaussian and Gumbel samplers;
- :mod:`~polars_rap.privacy.selection`, :mod:`~polars_rap.privacy.selection_scores`: the scores
  selection reads and their sensitivity;
- :mod:`~polars_rap.privacy.inference`, :mod:`~polars_rap.privacy.bounds`: domains learnt privately;
- :mod:`~polars_rap.privacy.report`, :mod:`~polars_rap.privacy.report_files`: what was released.
"""
