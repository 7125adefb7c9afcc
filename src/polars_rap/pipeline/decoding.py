"""The pipeline's decoding stage: the fitted relaxed rows become typed rows, here or block by
block into a folder, with what decoding may use of the release (a public label model, the
released histograms, numeric ties and numeric pairs' ranks). Post-processing of released values
only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from polars_rap.decode.decoding import decode
from polars_rap.decode.histogram_margins import HISTOGRAM_MATCH, HistogramMargins, histogram_margins
from polars_rap.decode.numeric_pairs import fitted_ties
from polars_rap.decode.numeric_ties import NumericTies
from polars_rap.decode.rank_pairs import RankPairs
from polars_rap.io.blocks import write_relaxed
from polars_rap.pipeline.arguments import RunSettings
from polars_rap.pipeline.fitting import Fitted, Workload
from polars_rap.pipeline.inputs import Inputs
from polars_rap.pipeline.streams import RandomStreams
from polars_rap.public.labels import LabelModel, label_model_for_release, label_noise_std

__all__ = ["Decoded", "decode_release"]


@dataclass(frozen=True, slots=True)
class Decoded:
    """The synthetic rows (``frame``: a DataFrame, or a LazyFrame over ``files`` when written to
    a folder), the ``numeric_coupling`` they were decoded with, and the decoding's add-ons the
    saved model keeps (each None when not used)."""

    frame: pl.DataFrame | pl.LazyFrame
    files: list[str] | None
    numeric_coupling: str
    label_model: LabelModel | None
    margins: HistogramMargins | None
    ties: NumericTies | None
    ranks: RankPairs | None = None


def decode_release(inputs: Inputs, workload: Workload, fitted: Fitted, run: RunSettings,
                   streams: RandomStreams) -> Decoded:
    """Decode ``fitted.relaxed`` into ``fitted.out_rows`` rows (into ``run.output`` when given,
    from Ray tasks when the pass ran on Ray), labels from the public table's model when it is
    used for them, every row keeping the declared constraints."""
    strategy, domain, queries, record = run.strategy, inputs.domain, workload.queries, fitted.record
    label_model = None if "labels" not in inputs.public_uses else label_model_for_release(
        inputs.public_table, domain, fitted.relaxed, label_noise_std(record.groups, record.noise_stds, queries, domain),
        streams.labels)
    # Numerics permuted within each label and moved toward its released histograms keep each label's measured
    # numerics; after a public label model's redraw they act on the new labels, whose rows otherwise carry the
    # other label's numerics (MM 1.4x, LT 2.1x at eps 1: public_labels_fitted.md). Released public rows ("reweight",
    # when its check chose them) stay as they are; when it kept the loop's rows, those decode as without a public table.
    keeps_rows = (fitted.reweight or {}).get("reweight_released", "synthetic rows") != "synthetic rows"
    numeric_coupling = "fitted" if keeps_rows else strategy.numeric_coupling
    margins = None if keeps_rows else histogram_margins(record, queries, HISTOGRAM_MATCH)
    ties = None
    if fitted.tie_release is not None and numeric_coupling == "label":
        # the numeric pairs' test reads each earlier column's counts by bin from its released histogram
        ties = fitted_ties(fitted.relaxed, domain, fitted.tie_layout, *fitted.tie_release, histograms=margins)
    ranks = fitted.rank_pairs if numeric_coupling == "label" else None
    add_ons: dict[str, Any] = dict(labels=label_model, numeric_coupling=numeric_coupling, margins=margins, ties=ties,
                                   constraints=inputs.constraints, ranks=ranks)
    if run.output is None:
        frame = decode(fitted.relaxed, domain, fitted.out_rows, streams.decode, method=strategy.decoding, **add_ons)
        return Decoded(frame, None, numeric_coupling, label_model, margins, ties, ranks)
    from polars_rap.io.ray_engine import RaySource  # no Ray import: it is read lazily

    files = write_relaxed(fitted.relaxed, domain, run.output, fitted.out_rows, decoding=strategy.decoding,
                          seed=None if run.seed is None else int(streams.decode.integers(2**63)),
                          block_rows=run.output_block_rows,
                          engine="ray" if isinstance(inputs.source, RaySource) else "polars", **add_ons)
    return Decoded(pl.scan_parquet(files), files, numeric_coupling, label_model, margins, ties, ranks)
