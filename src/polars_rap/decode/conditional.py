"""Conditional sampling: rows drawn from the fitted distribution given a condition.

The fitted distribution is what unconditioned decoding draws: a decoded row picks a relaxed
row, then each categorical block's code from that row's probabilities, then the numerics,
which the default decoding moves with steps over the whole sample (the label coupling, numeric
ties, histogram margins, rank pairs: :mod:`polars_rap.decode.decoding`). Given a condition
(:mod:`polars_rap.decode.conditions`), :func:`sample_where`

1. weights each relaxed row by its probability of the condition's exact part (per-column
   conjuncts on categorical columns and null indicators: the product over conditioned blocks
   of the allowed probability mass; on a numeric column's values too where decoding keeps the
   relaxed rows' values, a 0/1 factor), and allots the output rows to relaxed rows in
   proportion (systematic: each row ``floor`` or ``ceil`` of its expected count);
2. decodes each allotted row with every conditioned block drawn from its probabilities
   renormalised within the allowed codes (``"controlled"`` decoding stratifies within them),
   *anchored* to :data:`REFERENCE_ROWS` unconditioned rows decoded beside them: every numeric
   step ranks, pools and fits among those anchors, and each conditioned row takes the value the
   step gives at its place among them (:mod:`polars_rap.decode.anchors`);
3. keeps the rows that pass the whole condition and redraws the rest, in rounds: with only
   categorical per-column conjuncts every row passes at once; a residual over several columns,
   a condition on a numeric column whose values decoding moves, or a label column that a public
   label model redraws, is met by rejection from the step-1 proposal.

What is exact. The conditioned rows' law is the unconditioned rows' law restricted to the
condition: categories given a categorical condition are ``sum_i w_i P_i(. | condition) / sum_i
w_i`` (tests compare them by chi2), and everything else agrees with a filtered unconditioned
sample (two-sample chi2 and KS in the tests; ``bench/results/conditional_accuracy.md`` on the
headline datasets). The price of the numeric steps' batch view is the anchors (a quarter more
rows decoded) and, for a condition on a numeric column, ``1 / P(numeric part | the rest)``
proposals. Post-processing of released values only: no privacy cost.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from polars_rap.decode.conditions import Where, read_condition, row_probabilities
from polars_rap.decode.decoding import LabelModel, decoded_chunks, sample_frame, spread_rows
from polars_rap.decode.numeric_ties import TieScores
from polars_rap.decode.rank_pairs import RankLatent
from polars_rap.errors import ParameterError
from polars_rap.schema.encoding import EncodedData

if TYPE_CHECKING:
    from polars_rap.decode.constraints import Constraints
    from polars_rap.decode.histogram_margins import HistogramMargins
    from polars_rap.decode.numeric_ties import NumericTies
    from polars_rap.decode.rank_pairs import RankPairs
    from polars_rap.schema.domain import Domain

__all__ = ["MIN_PROBABILITY", "MIN_ACCEPTANCE", "MIN_REFERENCE_ROWS", "REFERENCE_ROWS", "sample_where"]

REFERENCE_ROWS = 50_000
"""The unconditioned rows each decoded chunk is anchored to (:mod:`polars_rap.decode.anchors`), at
most: enough that every label value's quantiles are read to about 1/25,000 on a binary label;
each chunk of conditioned rows (at least four times as many) decodes them again (fresh draws).
A request for fewer rows gets as many anchors as rows, at least :data:`MIN_REFERENCE_ROWS`: its
own sampling noise is the larger then (100 rows of a full CA model: 0.15 s rather than 0.9 s on
the 2-core EPYC)."""

MIN_REFERENCE_ROWS = 10_000

MIN_PROBABILITY = 1e-9
"""A condition the model gives a smaller probability is refused: the model holds (almost) no
such rows, and rows drawn anyway would come from the far tails of its softmax probabilities."""

MIN_ACCEPTANCE = 1e-3
"""A residual condition passing fewer proposed rows than this (after :data:`_EVIDENCE` proposals)
is refused with its estimated probability."""

_EVIDENCE = 10_000
_MAX_ROUND_ROWS = 2_000_000
_MAX_ROUNDS = 50


def sample_where(relaxed: np.ndarray, domain: Domain, rows: int, rng: np.random.Generator, where: Where, *,
                 method: str = "independent", labels: LabelModel | None = None, numeric_coupling: str = "fitted",
                 margins: HistogramMargins | None = None, ties: NumericTies | None = None,
                 constraints: Constraints | None = None, ranks: RankPairs | None = None) -> pl.DataFrame:
    """``rows`` decoded rows of ``relaxed`` (float32[n_relaxed, n_coords]) that all satisfy
    ``where``, drawn from the mixture conditioned on it (module docstring). With
    ``constraints`` their relations are computed on every decoded row and the rules join the
    residual (:mod:`polars_rap.decode.constraints`), as do the parts of ``where`` on a column a
    relation computes.

    Raises :class:`~polars_rap.errors.ParameterError` for a condition that names an unknown
    column or a value outside the domain, and for one the model gives a probability under
    :data:`MIN_PROBABILITY` (or whose residual passes under :data:`MIN_ACCEPTANCE` of the
    proposals, or would need more than ``20 rows + 10**6`` proposals), stating that probability.
    """
    moved = margins is not None or (numeric_coupling == "label" and any(b.is_label for b in domain.blocks))
    condition = read_condition(where, domain, relaxed, redrawn_labels=labels is not None,
                               computed=() if constraints is None else constraints.targets, moved_numerics=moved)
    reference = None
    if moved and domain.numeric_columns:
        reference = spread_rows(relaxed.shape[0], min(REFERENCE_ROWS, max(MIN_REFERENCE_ROWS, rows)), rng)
    weights = row_probabilities(condition, relaxed, domain)
    probability = float(weights.mean())
    if not probability >= MIN_PROBABILITY:
        msg = (f"The 'where' condition {condition.text!r} has probability {probability:.3g} under the model "
               f"(below {MIN_PROBABILITY:g}): the model holds (almost) no such rows, so none can be sampled. "
               "Widen the condition, or check that its parts do not contradict each other")
        raise ParameterError(msg)
    frames: list[pl.DataFrame] = []
    kept = drawn = passed = 0
    proposal = rows if not condition.residual and constraints is None else max(rows, _EVIDENCE)
    # the ties' scores and the pairs' correlations: fitted on the first round's anchors, reused by the rest
    fits = {"scores": TieScores(), "latent": RankLatent()} if reference is not None else {}
    for _ in range(_MAX_ROUNDS):
        allotted = _allot(weights, proposal, rng)
        chunks = decoded_chunks(relaxed, domain, allotted, rng, method, labels, numeric_coupling, margins, ties,
                                allowed=condition.masks, ranks=ranks, reference=reference, **fits)
        if constraints is None:
            frame = _passing(chunks, domain, condition.expression)
        else:  # the rules' relations are computed on every decoded row, so the whole frame is built
            frame = constraints.repair(pl.concat([sample_frame(chunk, domain) for chunk in chunks]), domain)
            passes = frame.select(condition.expression.fill_null(False)).to_series()
            frame = frame.filter(passes & pl.Series(constraints.passes(frame, domain)))
        n_pass = frame.height
        drawn, passed = drawn + proposal, passed + n_pass
        if n_pass == proposal and not frames:
            return frame.head(rows)
        frames.append(frame)
        kept += n_pass
        if kept >= rows:
            return pl.concat(frames, rechunk=True).head(rows)
        acceptance = passed / drawn
        needed = (rows - kept) / max(acceptance, 1.0 / drawn)
        if (drawn >= _EVIDENCE and acceptance < MIN_ACCEPTANCE) or drawn + needed > 20 * rows + 1_000_000:
            _refuse(condition.text, probability, passed, drawn, rows, constraints is not None)
        proposal = min(_MAX_ROUND_ROWS, max(1_000, math.ceil(1.1 * needed)))
    _refuse(condition.text, probability, passed, drawn, rows, constraints is not None)
    raise AssertionError("unreachable")  # pragma: no cover


def _passing(chunks: Iterable[EncodedData], domain: Domain, expression: pl.Expr) -> pl.DataFrame:
    """The decoded rows of ``chunks`` that pass ``expression`` (a null fails), as a frame: each
    chunk's rows are checked on a frame of the columns the expression reads, and only those
    that pass become whole rows (a condition met by rejection discards most of its proposals)."""
    names = set(expression.meta.root_names()) or None
    frames = []
    for chunk in chunks:
        passes = sample_frame(chunk, domain, names).select(expression.fill_null(False)).to_series().to_numpy()
        frames.append(sample_frame(EncodedData(chunk.codes[passes], chunk.numerics[passes]), domain))
    return frames[0] if len(frames) == 1 else pl.concat(frames, rechunk=False)


def _allot(weights: np.ndarray, n_rows: int, rng: np.random.Generator) -> np.ndarray:
    """int64[n_rows]: relaxed-row index of each output row, row ``i`` drawn with probability
    ``weights[i] / sum(weights)`` (systematic: ``floor`` or ``ceil`` of its expected count),
    shuffled."""
    cumulative = np.cumsum(weights)
    cumulative = cumulative / cumulative[-1] * n_rows
    allotted = np.searchsorted(cumulative, np.arange(n_rows) + rng.random(), side="right")
    allotted = np.minimum(allotted, int(np.flatnonzero(weights > 0)[-1])).astype(np.int64)
    rng.shuffle(allotted)
    return allotted


def _refuse(text: str, probability: float, passed: int, drawn: int, rows: int, constrained: bool = False) -> None:
    estimate = probability * passed / drawn
    proposals = f"about {rows * drawn / passed:.3g}" if passed else f"more than {drawn:,}"
    residual = "its part over several columns and the model's constraints" if constrained else (
        "its part over several columns")
    msg = (f"The 'where' condition {text!r} has estimated probability {estimate:.3g} under the model "
           f"({passed} of {drawn} proposed rows passed {residual}, whose per-column part has "
           f"probability {probability:.3g}); {rows} rows would take {proposals} proposals. Widen the condition, ask for fewer rows, or state it per column (a dict, or one-column "
           "comparisons joined by AND), which is sampled exactly without proposals")
    raise ParameterError(msg)
