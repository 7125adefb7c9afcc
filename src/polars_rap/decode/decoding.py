"""Decode relaxed data into typed rows: categories drawn from the relaxed probabilities,
numerics mapped back to their units and dtypes.

Relaxed synthetic data is ``float32[n_relaxed, n_coords]``: probabilities per categorical
block, then the mapped numerics. Decoding samples categories from those probabilities and maps
numerics back to their units and dtypes by the inverse map (atoms exactly, integers and
temporal values rounded to whole units, values inside the bounds).

Decoding gives each relaxed row ``k ≈ n_rows / n_relaxed`` output rows, in one of two ways:

- ``"independent"`` (the paper's): each copy draws its categories independently from the
  row's probabilities, and integer columns are rounded to the nearest integer;
- ``"controlled"``: the copies of a row (within each chunk of output rows) draw their
  categories by systematic sampling, one stratified uniform ``(rank + U) / k`` per copy in a
  random order per block, so that each category appears ``k p`` times up to one; integer
  columns are rounded to the nearest integer as above (real integer data sits on the
  integers, so the fit's values near one belong to it). Each copy's marginal law is the
  same as independent draws give, so expected answers of single-block queries are unchanged
  and their sampling noise shrinks from ``sqrt(k p (1 - p))`` to under one row per relaxed
  row; queries over several blocks keep independent pairing (the orders are independent).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator, Mapping
from typing import TYPE_CHECKING, Protocol

import numpy as np
import polars as pl

from polars_rap.kernels.cpu_sampling import block_cdfs, draw_codes, entries_by_row, stratify_column
from polars_rap.schema import temporal
from polars_rap.decode.numeric_coupling import check_numeric_coupling, decouple_numerics
from polars_rap.decode.numeric_ties import TieScores
from polars_rap.decode.rank_pairs import RankLatent
from polars_rap.schema.domain import ColumnSpec, Domain, decimal_steps
from polars_rap.schema.encoding import EncodedData, block_slices
from polars_rap.errors import ParameterError
from polars_rap.schema.transforms import from_unit, whole_units

if TYPE_CHECKING:
    from collections.abc import Callable

    from polars_rap.decode.histogram_margins import HistogramMargins
    from polars_rap.decode.numeric_ties import NumericTies
    from polars_rap.decode.rank_pairs import RankPairs

__all__ = ["DECODINGS", "decode", "decode_codes", "decode_rows", "decoded_chunks", "decoded_values", "numeric_series",
           "sample_frame", "spread_rows", "stratified_uniforms"]

logger = logging.getLogger(__name__)


class LabelModel(Protocol):
    """What decoding asks of a model that redraws the labels (a public table's
    :class:`~polars_rap.public.labels.LabelModel`): the share of rows it redraws, and the
    redraw itself, in place on the decoded codes."""

    share: float

    def redraw(self, sample: EncodedData, domain: Domain, rng: np.random.Generator) -> None: ...


class RowRules(Protocol):
    """What decoding asks of declared constraints (:class:`~polars_rap.decode.constraints.Constraints`):
    the decoded rows made to keep them, with more decoded rows from ``redraw(n)`` as needed."""

    def enforce(self, frame: pl.DataFrame, domain: Domain,
                redraw: Callable[[int], pl.DataFrame]) -> pl.DataFrame: ...


_DECODE_CHUNK_ROWS = 100_000
DECODINGS = ("independent", "controlled")

def decode_codes(
    relaxed: np.ndarray, domain: Domain, rows: np.ndarray, rng: np.random.Generator,
    uniforms: np.ndarray | None = None, allowed: Mapping[int, np.ndarray] | None = None,
) -> EncodedData:
    """Sample one discrete row per entry of ``rows`` (indices into ``relaxed``).

    Categorical blocks are sampled from the relaxed row's probabilities (renormalised) by
    inverting their CDF at ``uniforms[:, block]`` (float64[len(rows), >= n_blocks] in
    ``[0, 1)``; drawn iid from ``rng`` when None); numerics keep the relaxed coordinate.
    ``allowed`` maps a block index to float64[n_relaxed or 1, n_codes] 0/1 masks: that block's
    probabilities are multiplied by its relaxed row's mask before renormalising, so its code is
    drawn within the allowed codes (conditional sampling, :mod:`polars_rap.decode.conditional`).
    """
    relaxed = np.ascontiguousarray(relaxed, dtype=np.float64)
    uniform = rng.random((len(rows), len(domain.blocks))) if uniforms is None else uniforms
    slices = block_slices(domain)  # each block's sums once per relaxed row, then one search per row and block
    codes = draw_codes(block_cdfs(relaxed, slices, allowed), slices, rows, uniform)
    numerics = np.clip(relaxed[rows, domain.n_categorical_coords :], 0.0, 1.0)
    return EncodedData(codes, numerics)


def stratified_uniforms(rows: np.ndarray, n_columns: int, rng: np.random.Generator) -> np.ndarray:
    """float64[len(rows), n_columns] in ``[0, 1)``: for each column, the ``c`` entries that
    share a relaxed row get ``(rank + U) / c``, ranks ``0..c-1`` in a random order and one
    ``U ~ Uniform[0, 1)`` per (relaxed row, column). Each entry is marginally uniform; the
    ``c`` entries of a row cover ``[0, 1)`` in ``c`` equal strata (systematic sampling). Each
    column is contiguous (a transposed view), as :func:`decode_codes` reads them."""
    rows = np.asarray(rows, dtype=np.int64)
    out = np.empty((n_columns, len(rows)), dtype=np.float64)
    if len(rows) == 0:
        return out.T
    # Per column: one uniform per entry orders a relaxed row's entries (their ranks), then one
    # offset per relaxed row; the entries are grouped by row once (a counting sort) and each
    # group sorted alone, as a lexsort by (row, uniform) would order them.
    order, starts, counts = entries_by_row(rows, int(rows.max()) + 1)
    for column in range(n_columns):
        uniform = rng.random(len(rows))
        stratify_column(order, starts, counts, uniform, rng.random(len(counts)), out[column])
    return out.T


def spread_rows(n_relaxed: int, n_out: int, rng: np.random.Generator) -> np.ndarray:
    """int64[n_out]: relaxed-row index of each output row, each relaxed row used
    ``n_out // n_relaxed`` or one more times (systematic, so weights stay equal), shuffled."""
    repeats = np.repeat(np.arange(n_relaxed), n_out // n_relaxed)
    extra = rng.choice(n_relaxed, size=n_out % n_relaxed, replace=False)
    rows = np.concatenate([repeats, extra]).astype(np.int64)
    rng.shuffle(rows)
    return rows


def decode(
    relaxed: np.ndarray, domain: Domain, n_rows: int, rng: np.random.Generator,
    method: str = "independent", labels: LabelModel | None = None, numeric_coupling: str = "fitted",
    margins: HistogramMargins | None = None, ties: NumericTies | None = None,
    constraints: RowRules | None = None, ranks: RankPairs | None = None,
) -> pl.DataFrame:
    """Turn relaxed data into a frame of ``n_rows`` rows with the domain's names and dtypes.

    Each relaxed row yields ``n_rows / n_relaxed`` discrete rows (rounded systematically),
    drawn by ``method`` (``"independent"`` or ``"controlled"``, see the module docstring).
    Categories come only from the domain, numerics lie inside the bounds, integer columns are
    rounded, and nullable columns get nulls at the sampled rate. With ``labels`` (a public
    table's :class:`~polars_rap.public.labels.LabelModel`), each row's labels are then redrawn
    from it given the row's other columns. ``numeric_coupling`` ``"label"`` then permutes each
    numeric column's values among the rows of the same labels
    (:func:`polars_rap.decode.numeric_coupling.decouple_numerics`; after a redraw of a share of the rows,
    each label's values are drawn from the rows that held it as decoded: :mod:`polars_rap.public.labels`
    says why only then); ``"fitted"`` keeps each row's.
    With ``ties`` (after the ``"label"`` coupling) each numeric column's values are handed out
    again within each label so that they follow the released numeric ties
    (:mod:`polars_rap.decode.numeric_ties`). With ``margins`` the numeric values are last moved toward
    the released histograms (:mod:`polars_rap.decode.histogram_margins`), chunk by chunk.
    With ``ranks`` each label's numeric columns are last permuted so that every pair's rank
    statistic meets its release (:mod:`polars_rap.decode.rank_pairs`). With ``constraints`` (:mod:`polars_rap.decode.constraints`) relations are then computed and
    rows that break a rule are replaced in place by rows decoded the same way that keep them.
    """
    check_numeric_coupling(numeric_coupling)
    if method not in DECODINGS:
        msg = f"unknown decoding {method!r}; choose one of {', '.join(repr(d) for d in DECODINGS)}"
        raise ParameterError(msg)
    rows = spread_rows(relaxed.shape[0], n_rows, rng)
    frame = decode_rows(relaxed, domain, rows, rng, method, labels, numeric_coupling, margins, ties, ranks=ranks)
    if constraints is None:
        return frame
    return constraints.enforce(frame, domain, lambda n: decode_rows(
        relaxed, domain, spread_rows(relaxed.shape[0], n, rng), rng, method, labels, numeric_coupling, margins, ties,
        ranks=ranks))


def decode_rows(
    relaxed: np.ndarray, domain: Domain, rows: np.ndarray, rng: np.random.Generator,
    method: str = "independent", labels: LabelModel | None = None, numeric_coupling: str = "fitted",
    margins: HistogramMargins | None = None, ties: NumericTies | None = None,
    allowed: Mapping[int, np.ndarray] | None = None, ranks: RankPairs | None = None,
    reference: np.ndarray | None = None, scores: TieScores | None = None, latent: RankLatent | None = None,
) -> pl.DataFrame:
    """:func:`decode` for given relaxed rows: one output row per entry of ``rows``
    (int64[n_rows], indices into ``relaxed``, in output order), each block's code drawn within
    ``allowed`` (see :func:`decode_codes`; None: all codes). With ``reference`` (int64[m],
    relaxed rows of an unconditioned sample, :func:`spread_rows`) every chunk is decoded
    anchored to a fresh decoding of those rows, which is not output
    (:mod:`polars_rap.decode.anchors`): the numeric steps' ranks and pools come from it. Anchored
    chunks hold at least four times the reference's rows, so that the anchors add at most a
    quarter to the rows decoded. ``scores`` / ``latent``: the ties' scores and the pairs' latent
    correlations fitted by an earlier call on rows drawn alike (anchored calls of one
    conditioned sample), reused and filled as a first chunk fills them; None: fitted here."""
    frames = [sample_frame(sample, domain) for sample in decoded_chunks(
        relaxed, domain, rows, rng, method, labels, numeric_coupling, margins, ties, allowed, ranks, reference, scores,
        latent)]
    return frames[0] if len(frames) == 1 else pl.concat(frames, rechunk=False)


def decoded_chunks(
    relaxed: np.ndarray, domain: Domain, rows: np.ndarray, rng: np.random.Generator,
    method: str = "independent", labels: LabelModel | None = None, numeric_coupling: str = "fitted",
    margins: HistogramMargins | None = None, ties: NumericTies | None = None,
    allowed: Mapping[int, np.ndarray] | None = None, ranks: RankPairs | None = None,
    reference: np.ndarray | None = None, scores: TieScores | None = None, latent: RankLatent | None = None,
) -> Iterator[EncodedData]:
    """:func:`decode_rows`'s rows chunk by chunk as encoded rows (codes and mapped numerics),
    before they become a frame (:func:`sample_frame`), so that a caller may keep some of them."""
    # In chunks, so memory stays bounded for any n_rows. Independent draws come in the same
    # order as one call would make them, so that output does not depend on the chunk size;
    # controlled decoding stratifies within each chunk (of a fixed size, so still reproducible).
    # The ties' latent scores and the pairs' latent correlations are fitted on the first chunk
    # and reused by the others.
    chunk = _DECODE_CHUNK_ROWS if reference is None else max(_DECODE_CHUNK_ROWS, 4 * len(reference))
    if ties is not None and scores is None:
        scores = TieScores()
    latent = RankLatent() if latent is None else latent
    for a in range(0, max(len(rows), 1), chunk):
        yield _decoded_sample(relaxed, domain, rows[a:a + chunk], rng, method, labels, numeric_coupling, margins,
                              ties, scores, allowed, ranks, latent, reference)


def _decoded_sample(relaxed: np.ndarray, domain: Domain, rows: np.ndarray,
                    rng: np.random.Generator, method: str, labels: LabelModel | None = None,
                    numeric_coupling: str = "fitted", margins: HistogramMargins | None = None,
                    ties: NumericTies | None = None, scores: TieScores | None = None,
                    allowed: Mapping[int, np.ndarray] | None = None, ranks: RankPairs | None = None,
                    latent: RankLatent | None = None, reference: np.ndarray | None = None) -> EncodedData:
    sample = _drawn_codes(relaxed, domain, rows, rng, method, allowed)
    anchor = None
    if reference is not None:
        anchors = _drawn_codes(relaxed, domain, reference, rng, method, None)
        sample = EncodedData(np.concatenate([anchors.codes, sample.codes]),
                             np.concatenate([anchors.numerics, sample.numerics]))
        anchor = np.arange(len(sample.codes)) < len(reference)
    pool_codes = None  # the labels as decoded, where the measurements win: each label keeps its fitted numerics
    if labels is not None:
        if numeric_coupling == "label" and labels.share < 1.0:
            pool_codes = sample.codes.copy()
        labels.redraw(sample, domain, rng)
    if numeric_coupling == "label":
        sample = EncodedData(sample.codes, decouple_numerics(sample.codes, sample.numerics, domain, rng, pool_codes,
                                                             anchor))
        if ties is not None:
            sample = EncodedData(sample.codes, ties.apply(sample.codes, sample.numerics, domain, rng, scores, anchor))
    if margins is not None:
        sample = EncodedData(sample.codes, margins.apply(sample.codes, sample.numerics, domain, rng, anchor))
    if ranks is not None:  # a permutation within each label and null state: the margins' match stays
        sample = EncodedData(sample.codes, ranks.apply(sample.codes, sample.numerics, domain, rng, latent, anchor,
                                                       beside_ties=ties is not None))
    if anchor is not None:
        sample = EncodedData(sample.codes[~anchor], sample.numerics[~anchor])
    return sample


def sample_frame(sample: EncodedData, domain: Domain, names: Collection[str] | None = None) -> pl.DataFrame:
    """The decoded rows ``sample`` (codes and mapped numerics) as a frame of the domain's
    columns (those in ``names`` where given, in the domain's order), in their names and dtypes:
    categories from the domain, numerics in their units, nulls where their indicators say."""
    columns: dict[str, pl.Series] = {}
    numeric_index = {spec.name: j for j, spec in enumerate(domain.numeric_columns)}
    for spec in domain.columns:
        if names is not None and spec.name not in names:
            continue
        if spec.is_categorical:
            block = domain.block_index(spec.name)
            columns[spec.name] = _categories_from_codes(sample.codes[:, block], spec)
        else:
            series = numeric_series(sample.numerics[:, numeric_index[spec.name]], spec)
            if spec.nullable:
                is_null = sample.codes[:, domain.block_index(spec.name, indicator=True)] == 1
                series = pl.select(
                    pl.when(pl.lit(pl.Series(is_null))).then(None).otherwise(series).alias(spec.name)
                ).to_series()
            columns[spec.name] = series.cast(spec.dtype)
    return pl.DataFrame(columns)


def _drawn_codes(relaxed: np.ndarray, domain: Domain, rows: np.ndarray, rng: np.random.Generator, method: str,
                 allowed: Mapping[int, np.ndarray] | None) -> EncodedData:
    """:func:`decode_codes` of ``rows`` by ``method`` (stratified among the copies of a relaxed
    row for ``"controlled"``)."""
    uniforms = stratified_uniforms(rows, len(domain.blocks), rng) if method == "controlled" else None
    return decode_codes(relaxed, domain, rows, rng, uniforms, allowed)


def numeric_series(u: np.ndarray, spec: ColumnSpec) -> pl.Series:
    """A numeric column's decoded values from its coordinates ``u`` (float64[n] in ``[0, 1]``),
    named as the column, in its units (temporal columns as such) before the cast to its dtype
    and before nulls: :func:`decoded_values` as a Series."""
    values = decoded_values(u, spec)
    if spec.is_temporal:
        return temporal.from_internal(spec.name, values, spec.dtype)
    return pl.Series(spec.name, values)


def decoded_values(u: np.ndarray, spec: ColumnSpec) -> np.ndarray:
    """float64[n]: a numeric column's values in its (internal) units from its coordinates ``u``
    (float64[n] in ``[0, 1]``), as decoding returns them: through the inverse map, rounded to
    whole units for an integer or temporal column, inside the bounds; a ``Decimal`` column's on
    its grid of ``10**-scale``, inside the bounds too once cast (a bound off the grid, such as
    2.4699999999999998 at scale 2, would otherwise let 2.47 out); a ``Float32`` column's on the
    float32 numbers inside the bounds."""
    values = from_unit(u, spec)
    if spec.is_integer:
        values = whole_units(values, spec)
    values = np.clip(values, spec.lower, spec.upper)
    if isinstance(spec.dtype, pl.Decimal) and spec.dtype.scale is not None:
        values = _on_decimal_grid(values, spec.lower, spec.upper, int(spec.dtype.scale))
    if spec.dtype == pl.Float32:
        values = _inside_as_float32(values, spec.lower, spec.upper)
    return values


def _inside_as_float32(values: np.ndarray, lower: float, upper: float) -> np.ndarray:
    """float64[n]: ``values`` clipped to the float32 numbers inside ``[lower, upper]``, so that the
    cast to Float32 (round to nearest) stays inside: 3e38 is 3.0000000054977558e38 as a float32,
    above an upper bound of 3e38 (Hypothesis, 2026-11-29). Unchanged where no float32 lies
    inside."""
    low, high = np.float32(lower), np.float32(upper)
    if float(low) < lower:
        low = np.nextafter(low, np.float32(np.inf))
    if float(high) > upper:
        high = np.nextafter(high, np.float32(-np.inf))
    if low > high:
        return values
    return np.clip(values, float(low), float(high))


def _on_decimal_grid(values: np.ndarray, lower: float, upper: float, scale: int) -> np.ndarray:
    """float64[n]: ``values`` rounded to multiples of ``10**-scale``, kept to the multiples
    inside ``[lower, upper]`` (:func:`polars_rap.schema.domain.decimal_steps`); unchanged where no
    multiple lies inside."""
    lowest, highest = decimal_steps(lower, upper, scale)
    if lowest > highest:
        return values
    steps = np.clip(np.rint(values * 10.0**scale), lowest, highest)
    return steps / 10.0**scale


def _categories_from_codes(codes: np.ndarray, spec: ColumnSpec) -> pl.Series:
    categories = list(spec.categories) + ([None] if spec.nullable else [])
    lookup_dtype = spec.dtype
    if isinstance(spec.dtype, (pl.Enum, pl.Categorical)):
        lookup_dtype = pl.String
    lookup = pl.Series(spec.name, categories).cast(lookup_dtype)
    return lookup.gather(pl.Series(codes.astype(np.int64))).cast(spec.dtype).rename(spec.name)
