"""Turns over the categorical tables, so that a round's cost grows like the columns.

A table of ``c`` categorical columns has about ``c^2 / 2`` class-conditional tables (CM groups).
Two things touched every one of them in every round of the annealed CM step: the selection's
scores (the relaxed rows' answers on every candidate table) and the independence prior's
pseudo-targets (every table not yet measured, fitted at every projection). With the rounds set
by the budget, not the width, that made a fit's time grow like ``c^3`` (``bench/results/
wide_profile_before.md``: 12 s at 20 columns, 81 s at 39, 486 s at 77).

The step's T0 (the rounds its budget is first split over) stops growing at
:data:`MAX_ANNEALED_ROUNDS` and its rounds pick more tables each past :data:`COLUMNS_PER_PICK`
columns (:func:`polars_rap.fit.planning.with_round_cap`), and past
:data:`TABLES_PER_COLUMN` tables per categorical column both of the above look at a slice:
every ``s``-th table, the slice moving on by one each turn (:func:`table_turn`), so that ``s``
turns cover every table once. The slices are public (the workload's group ids and a turn count),
so taking them changes nothing in the privacy analysis: a selection over a slice is the same
Gumbel top-k with the same sensitivity over fewer candidates, and the prior is post-processing.
Every suite table is below the cap and runs exactly as before.
"""

from __future__ import annotations

import numpy as np

__all__ = ["COLUMNS_PER_PICK", "MAX_ANNEALED_ROUNDS", "TABLES_PER_COLUMN", "table_stride", "table_turn"]

MAX_ANNEALED_ROUNDS = 200
"""Largest T0 of an annealed step (:func:`polars_rap.fit.planning.with_round_cap`), which first
splits the step's budget over T0 rounds, T0 the number of its tables up to this
(acs-income-CA: 153, the NIST national excerpt: 136)."""
COLUMNS_PER_PICK = 20
"""An annealed round of a table of ``c`` categorical columns picks ``ceil(c / 20)`` tables
(one up to 20 columns, every suite table): at 77 columns, one table a round over T0 = 2,850
ran 74 rounds, and over a T0 capped at 200 still 74 (``bench/results/wide_profile.md``)."""
TABLES_PER_COLUMN = 10
"""Most tables a selection round scores, and a projection fits pseudo-targets to, per
categorical column (labels and null indicators included). Every table is looked at each time up
to 22 columns (231 tables > 220 at 23); acs-income-CA has 153 over 19 columns (cap 190)."""


def table_stride(n_tables: int, n_columns: int) -> int:
    """``s``: the smallest stride whose slices of ``n_tables`` hold at most
    :data:`TABLES_PER_COLUMN` x ``n_columns`` tables (1: all of them at once).

    >>> table_stride(153, 19), table_stride(25_000, 225)
    (1, 12)
    """
    cap = TABLES_PER_COLUMN * max(int(n_columns), 1)
    return max(1, -(-int(n_tables) // cap))


def table_turn(groups: np.ndarray, stride: int, turn: int) -> np.ndarray:
    """The slice of ``groups`` (int64[g]) looked at on turn ``turn`` (an int >= 0): every
    ``stride``-th from position ``turn mod stride`` (all of them at stride 1). The caller picks
    the stride: :func:`table_stride` of its tables, or 1 where every table is taken at once.

    >>> table_turn(np.arange(25), stride=table_stride(25, n_columns=2), turn=3).tolist()  # cap 20
    [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23]
    """
    return groups if stride == 1 else groups[turn % stride::stride]
