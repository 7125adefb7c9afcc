"""A public table's label model (``public_use="labels"``, issue 19): labels drawn from the
public table's conditional, tilted to the synthetic rows' own margins.

The projection fits the measured marginals; how a label depends on several features *at
once* is left to whatever the relaxed rows happen to hold, and at small ε that is mostly
noise. A public table of the same population knows that dependence. With this use, after
decoding, every synthetic row's label (or a share of them, below) is redrawn from

    P(label = c | x) = softmax_c(x · (B_public + B_tilt))

where ``x`` is the row's features (one-hot: an intercept, every other categorical block's
code, every numeric column's cell among :data:`NUMERIC_CELLS` equal cells of ``[0, 1]`` or a
null cell), ``B_public`` is a multinomial logistic regression fitted on the public rows
(ridge 1 on the summed log-loss, as scikit-learn's default ``C = 1``), and ``B_tilt``
minimises the mean log-loss of the synthetic rows' *own* labels with ``x · B_public`` as an
offset, plus ``ridge / 2 · ||B_tilt||²``. Without the ridge the tilt restores every feature x
label margin of the synthetic rows exactly (the moment equations of a logistic fit), so what
changes is only the labels' higher-order dependence, now the public table's. The ridge says
how far to trust the synthetic margins: it is :func:`tilt_ridge` of the measurements' noise,
so the public conditional weighs less as ε grows (a Gaussian prior on ``B_tilt`` against
measurements of that noise; ``bench/results/probe_label_model.md`` measured the scale). Where
the measurements are sharp enough to carry the labels' structure themselves, only a share of
the rows (:func:`redraw_share`) is redrawn; the others keep the label decoded from their
relaxed row.

Two details keep the redraw from moving what it should not. The tilt is fitted on rows
decoded with stratified draws (:func:`~polars_rap.decode.decoding.stratified_uniforms`), so their
label margin is the relaxed rows' and not a draw's (0.0016 of sampling noise at 100,000 rows).
The redrawn rows take each label value as many times as the model expects over them
(:mod:`polars_rap.public.counted_draws`), so the label's margin moves exactly :attr:`LabelModel.share`
of the way to the model's, without the noise of which rows were redrawn and of independent
draws (0.0026 on acs-income-CA at ε = 1 with Puerto Rico's table, and every class-conditional
query with it). Where only a share is redrawn (the measurements win) and
``numeric_coupling="label"``, each label's numerics are drawn from the rows that held it before
the redraw (:func:`polars_rap.decode.numeric_coupling.redrawn_pools`), so every numeric column's
distribution within a label stays the fitted one; where every row is (the model wins), they
stay with their rows and follow the model's labels, the better guide there
(``bench/results/public_labels_pools_everywhere.md``: pooled at ε = 0.1, MM 1.07-1.29x and LT
1.12-1.44x of no public table).

Privacy: post-processing. The fit reads the public table and rows decoded from the released
relaxed rows; the ridge reads the released noise scales. Nothing here touches the sensitive
rows, so nothing is charged (design.md §2 item 6).

The model is part of the release: :class:`~polars_rap.pipeline.model.SyntheticModel` keeps it, saves it
(``label_model.arrow``) and applies it to every row it samples or writes.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from polars_rap.public.counted_draws import draw_with_counts, rounded_counts
from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import EncodedData
from polars_rap.decode.decoding import decode_codes, spread_rows, stratified_uniforms
from polars_rap.errors import DataError, ParameterError
from polars_rap.public.prior import touches_columns
from polars_rap.workload.queries import CLASS_CODES, QuerySet

__all__ = ["NUMERIC_CELLS", "FIT_ROWS", "PUBLIC_FIT_ROWS", "LabelModel", "check_label_use", "feature_index",
           "fit_label_model", "label_model_for_release", "label_noise_std", "redraw_share", "tilt_ridge"]

logger = logging.getLogger(__name__)

NUMERIC_CELLS = 10
"""Equal cells of a numeric column's ``[0, 1]`` coordinate, each one feature (plus a null cell)."""
FIT_ROWS = 100_000
"""Synthetic rows decoded to fit the tilt (about 1 s): its coefficients' sampling noise is
then far below the measurements'."""
RIDGE_PER_NOISE_VARIANCE = 150.0
"""``ridge = 150 · s²`` (:func:`tilt_ridge`): 0.014 on acs-income-CA at ε = 0.25 (s = 0.0096),
where the probes found ridges of 0.01-0.1 best (``bench/results/probe_label_model.md``), about
0.08 at ε = 0.1 (s = 0.023), where 0.1 was (``probe_label_sweep.md``), and 0.002-0.004 at
ε = 1 (s = 0.0038-0.0051), where 0.01 already cost CM: a prior's weight against measurements
of variance s²."""
PUBLIC_FIT_ROWS = 1_000_000
"""Public rows the public model is fitted on at most (a sample without replacement beyond):
about 35 s of Newton steps on two cores for the CA task's 151 features (9 s for 260,818 rows)."""
FULL_SHARE_STD = 0.009
"""Below this noise std ``s`` only a share ``(s / 0.009)²`` of the rows gets a redrawn label
(:func:`redraw_share`). With every row redrawn, acs-income-CA at ε = 1 (s = 0.0038-0.0051) lost
CM 4% with the other states' table and 10% with Puerto Rico's, while at ε <= 0.25 (s >= 0.0096)
every error fell (``bench/results/public_labels_share1.md``): once the measurements carry the
labels' structure, replacing it costs more than the public table adds, and the share lets the
measurements win as they sharpen."""
_PUBLIC_RIDGE = 1.0
"""Ridge of the public fit on its summed log-loss (scikit-learn's ``C = 1``)."""


def feature_index(codes: np.ndarray, numerics: np.ndarray, domain: Domain, label_block: int) -> np.ndarray:
    """int64[n, n_parts]: each row's active feature per part of the design (the intercept,
    every categorical block but ``label_block``, every numeric column), as indices into the
    coefficient rows. ``codes`` int32[n, n_blocks], ``numerics`` float64[n, n_numeric] in ``[0, 1]``
    (a nullable numeric's null indicator block picks its null cell)."""
    n = codes.shape[0]
    parts = [np.zeros(n, dtype=np.int64)]
    start = 1
    for b, size in enumerate(domain.block_sizes):
        if b != label_block:
            parts.append(start + codes[:, b].astype(np.int64))
            start += size
    for j, spec in enumerate(domain.numeric_columns):
        cell = np.minimum(np.floor(np.nan_to_num(numerics[:, j]) * NUMERIC_CELLS), NUMERIC_CELLS - 1)
        cell = np.maximum(cell, 0).astype(np.int64)
        if spec.nullable:
            cell = np.where(codes[:, domain.block_index(spec.name, indicator=True)] == 1, NUMERIC_CELLS, cell)
        parts.append(start + cell)
        start += NUMERIC_CELLS + 1
    return np.stack(parts, axis=1)


def _n_features(domain: Domain, label_block: int) -> int:
    sizes = domain.block_sizes
    return 1 + sum(sizes) - sizes[label_block] + (NUMERIC_CELLS + 1) * len(domain.numeric_columns)


def _logits(index: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    """float64[n, k]: the sum over parts of the active features' coefficient rows."""
    return coefficients[index].sum(axis=1)


def _design(index: np.ndarray, n_features: int):
    """The one-hot design, scipy.sparse CSR float64[n, n_features], from :func:`feature_index`."""
    from scipy.sparse import csr_matrix

    n, parts = index.shape
    return csr_matrix((np.ones(n * parts), index.ravel(), np.arange(0, n * parts + 1, parts)), shape=(n, n_features))


def _objective(design, base: np.ndarray, labels: np.ndarray, coefficients: np.ndarray, ridge: float):
    """(mean log-loss plus ridge, softmax probabilities float64[n, k]) at ``coefficients``."""
    logits = base + design @ coefficients
    top = logits.max(axis=1, keepdims=True)
    log_total = top[:, 0] + np.log(np.exp(logits - top).sum(axis=1))
    loss = float(np.mean(log_total - logits[np.arange(len(labels)), labels]))
    return loss + 0.5 * ridge * float((coefficients ** 2).sum()), np.exp(logits - log_total[:, None])


def _fit(index: np.ndarray, labels: np.ndarray, n_codes: int, n_features: int, offset: np.ndarray | None,
         ridge: float, iterations: int = 50) -> np.ndarray:
    """float64[n_features, n_codes]: ``B`` minimising ``mean_i [logsumexp(o_i + x_i B) - (o_i +
    x_i B)_{y_i}] + ridge / 2 · ||B||²`` with ``B[:, 0] = 0`` (code 0 the reference, as in a
    binary logistic regression). Newton's method with step halving on the sparse one-hot
    design (the Hessian is ``(n_features · (n_codes - 1))²``, small); strictly convex for
    ``ridge > 0``, so it stops when a step moves no coefficient by more than 1e-9."""
    design = _design(index, n_features)
    n, free = len(labels), n_codes - 1
    onehot = np.zeros((n, n_codes))
    onehot[np.arange(n), labels] = 1.0
    base = np.zeros((n, n_codes)) if offset is None else offset
    coefficients = np.zeros((n_features, n_codes))
    loss, probabilities = _objective(design, base, labels, coefficients, ridge)
    for _ in range(iterations):
        gradient = (design.T @ (probabilities - onehot))[:, 1:] / n + ridge * coefficients[:, 1:]
        hessian = np.empty((free * n_features, free * n_features))
        for a in range(free):
            for b in range(a, free):
                weight = probabilities[:, a + 1] * ((a == b) - probabilities[:, b + 1]) / n
                block = (design.T @ design.multiply(weight[:, None])).toarray()
                hessian[a * n_features:(a + 1) * n_features, b * n_features:(b + 1) * n_features] = block
                hessian[b * n_features:(b + 1) * n_features, a * n_features:(a + 1) * n_features] = block.T
        hessian[np.diag_indices_from(hessian)] += ridge
        step = np.linalg.solve(hessian, gradient.T.ravel()).reshape(free, n_features).T
        for _halving in range(30):
            trial = coefficients.copy()
            trial[:, 1:] -= step
            trial_loss, trial_probabilities = _objective(design, base, labels, trial, ridge)
            if trial_loss <= loss:
                break
            step = step / 2
        else:
            break
        coefficients, loss, probabilities = trial, trial_loss, trial_probabilities
        if np.abs(step).max() < 1e-9:
            break
    return coefficients


def label_noise_std(groups: Sequence[int], noise_stds: Sequence[float], queries: QuerySet, domain: Domain) -> float:
    """The median noise std (a fraction of the rows) of the measured categorical marginals
    that hold a label, the margins the tilt fits; of every measured group that reads a label
    when no such marginal was measured, and of every measured group when none reads one.
    ``groups`` (int) and ``noise_stds`` (float): each measurement's group and std, released."""
    if len(groups) == 0:
        msg = "the label model needs at least one measurement to weigh the public table against"
        raise ParameterError(msg)
    flags = np.zeros(len(domain.blocks), dtype=bool)
    flags[[domain.block_index(label) for label in domain.labels]] = True
    reads = touches_columns(queries, flags, np.zeros(len(domain.numeric_columns), dtype=bool))
    group_reads = np.add.reduceat(reads, queries.group_offsets[:-1]) > 0
    groups, stds = np.asarray(groups, dtype=np.int64), np.asarray(noise_stds, dtype=np.float64)
    marginal = group_reads[groups] & (queries.group_class[groups] == CLASS_CODES["CM"])
    for chosen in (marginal, group_reads[groups], np.ones(len(groups), dtype=bool)):
        if chosen.any():
            return float(np.median(stds[chosen]))
    raise AssertionError("unreachable")


def redraw_share(noise_std: float) -> float:
    """The share of rows whose labels the model redraws: ``min(1, (s / FULL_SHARE_STD)²)`` for
    ``s`` = ``noise_std`` (:func:`label_noise_std`). Released values only."""
    return min(1.0, (float(noise_std) / FULL_SHARE_STD) ** 2)


def tilt_ridge(noise_std: float) -> float:
    """The tilt's ridge, :data:`RIDGE_PER_NOISE_VARIANCE` ``· s²`` for ``s`` = ``noise_std``
    (:func:`label_noise_std`). Released values only."""
    return RIDGE_PER_NOISE_VARIANCE * float(noise_std) ** 2


@dataclass(frozen=True, slots=True, eq=False)
class LabelModel:
    """The label model of a release: per label column (domain order), the coefficients
    float64[n_features, n_codes] of :func:`feature_index`'s design, the tilt's ridge, and the
    share of rows whose labels are redrawn (:func:`redraw_share`; the others keep the label
    decoded from their relaxed row)."""

    labels: tuple[str, ...]
    coefficients: tuple[np.ndarray, ...] = field(repr=False)
    ridge: float
    share: float = 1.0

    def redraw(self, sample: EncodedData, domain: Domain, rng: np.random.Generator) -> None:
        """Replace each label's codes in ``sample`` (in place) with draws from the model in a
        :attr:`share` of the rows (each row independently chosen), one label after the other (a
        later label sees the earlier ones' new codes).

        The label's margin moves by :attr:`share` of the way from the rows' decoded margin to
        the model's expected one over all rows, exactly: the redrawn rows ``R`` take code ``c``
        ``sum_{i in R} [y_i = c] + |R| / n · sum_i (p_ic - [y_i = c])`` times (rounded,
        :func:`polars_rap.public.counted_draws.rounded_counts`), drawn with those counts
        (:func:`polars_rap.public.counted_draws.draw_with_counts`). Drawn independently, the margin
        would also move by which rows happened to be redrawn and by the draws' binomial noise
        (together about 0.002 on acs-income-CA at ε = 1, a third of the rows redrawn)."""
        for label, coefficients in zip(self.labels, self.coefficients, strict=True):
            block = domain.block_index(label)
            chosen = np.ones(len(sample.codes), dtype=bool)
            if self.share < 1.0:
                chosen = rng.random(len(chosen)) < self.share
            if not chosen.any():
                continue
            logits = _logits(feature_index(sample.codes, sample.numerics, domain, block), coefficients)
            log_probabilities = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
            n_codes = coefficients.shape[1]
            decoded = np.bincount(sample.codes[:, block], minlength=n_codes)
            kept = np.bincount(sample.codes[chosen, block], minlength=n_codes)
            moved = np.exp(log_probabilities).sum(axis=0) - decoded
            target = np.clip(kept + chosen.mean() * moved, 0.0, None)
            counts = rounded_counts(target * (chosen.sum() / target.sum()))
            sample.codes[chosen, block] = draw_with_counts(log_probabilities[chosen], counts, rng)

    def to_arrow(self) -> pa.Table:
        """One row per (label, feature, code): ``label`` (str), ``feature``, ``code`` (int32),
        ``coefficient`` (float64); the ridge and share in the schema's metadata."""
        parts = []
        for label, coefficients in zip(self.labels, self.coefficients, strict=True):
            features, codes = np.indices(coefficients.shape)
            parts.append(pa.table({"label": pa.array([label] * coefficients.size, pa.string()),
                                   "feature": pa.array(features.ravel(), pa.int32()),
                                   "code": pa.array(codes.ravel(), pa.int32()),
                                   "coefficient": pa.array(coefficients.ravel(), pa.float64())}))
        table = pa.concat_tables(parts)
        return table.replace_schema_metadata({"ridge": repr(self.ridge), "share": repr(self.share)})

    @classmethod
    def from_arrow(cls, table: pa.Table, domain: Domain) -> LabelModel:
        """The model :meth:`to_arrow` wrote, checked against ``domain`` (a
        :class:`~polars_rap.errors.DataError` names what does not fit)."""
        try:
            ridge = float((table.schema.metadata or {})[b"ridge"])
            share = float((table.schema.metadata or {})[b"share"])
            labels = table.column("label").to_pylist()
            features = table.column("feature").to_numpy()
            codes = table.column("code").to_numpy()
            values = table.column("coefficient").to_numpy()
        except (KeyError, ValueError) as error:
            msg = f"the label model is not one polars-rap wrote: {error}"
            raise DataError(msg) from error
        names, coefficients = tuple(dict.fromkeys(labels)), []
        for name in names:
            if name not in domain.labels:
                msg = f"the label model names {name!r}, which is not a label of the model's domain {list(domain.labels)}"
                raise DataError(msg)
            block = domain.block_index(name)
            shape = (_n_features(domain, block), domain.block_sizes[block])
            rows = np.array([label == name for label in labels])
            if rows.sum() != shape[0] * shape[1]:
                msg = f"the label model of {name!r} has {rows.sum()} coefficients; the domain needs {shape[0] * shape[1]}"
                raise DataError(msg)
            matrix = np.zeros(shape)
            matrix[features[rows], codes[rows]] = values[rows]
            coefficients.append(matrix)
        return cls(names, tuple(coefficients), ridge, share)


def check_label_use(labels: Sequence[str], public_columns: Sequence[str]) -> None:
    """Raise :class:`~polars_rap.errors.DataError` unless there is a label and the public table
    holds every label column (``public_columns``: its columns, from its schema). Called before
    any row of either table is read."""
    if not labels:
        msg = ("public_use 'labels' needs a label column: pass labels=[...] (the column a model "
               "trained on the synthetic data will predict), or drop 'labels' from public_use")
        raise DataError(msg)
    for label in labels:
        if label not in public_columns:
            msg = (f"the public table lacks the label column {label!r}, so it has no label model to offer; "
                   "add the column to the public table or drop 'labels' from public_use")
            raise DataError(msg)


def fit_label_model(public_codes: np.ndarray, public_numerics: np.ndarray, filled_blocks: np.ndarray,
                    synthetic: EncodedData, domain: Domain, ridge: float, share: float = 1.0) -> LabelModel:
    """Fit :class:`LabelModel` for every label of ``domain``: the public model on the public
    rows (``public_codes`` int32[n_public, n_blocks], ``public_numerics`` float64[n_public,
    n_numeric]), then the tilt on the ``synthetic`` rows (decoded from the released relaxed
    rows) with ridge ``ridge``. Public and released values only: no privacy cost.

    Raises :class:`~polars_rap.errors.DataError` as :func:`check_label_use`.
    """
    check_label_use(domain.labels, [block.source for block, filled in zip(domain.blocks, filled_blocks, strict=True)
                                    if not filled])
    if not math.isfinite(ridge) or ridge <= 0:
        msg = f"the label model's ridge must be a positive number. Got {ridge!r}"
        raise ParameterError(msg)
    coefficients = []
    for label in domain.labels:
        block = domain.block_index(label)
        n_features, n_codes = _n_features(domain, block), domain.block_sizes[block]
        public_index = feature_index(public_codes, public_numerics, domain, block)
        public = _fit(public_index, public_codes[:, block], n_codes, n_features, None,
                      _PUBLIC_RIDGE / len(public_index))
        index = feature_index(synthetic.codes, synthetic.numerics, domain, block)
        tilt = _fit(index, synthetic.codes[:, block], n_codes, n_features, _logits(index, public), ridge)
        coefficients.append(public + tilt)
    return LabelModel(tuple(domain.labels), tuple(coefficients), float(ridge), float(share))


def label_model_for_release(public, domain: Domain, relaxed: np.ndarray, noise_std: float,
                            rng: np.random.Generator) -> LabelModel:
    """The label model of a release: :func:`fit_label_model` on ``public`` (a
    :class:`~polars_rap.public.prior.PublicTable`; :data:`PUBLIC_FIT_ROWS` of its rows at most)
    and :data:`FIT_ROWS` rows decoded from
    ``relaxed`` (float32[n_relaxed, n_coords], released) with ``rng``, its ridge
    :func:`tilt_ridge` and share :func:`redraw_share` of ``noise_std`` (:func:`label_noise_std`)."""
    rows = spread_rows(relaxed.shape[0], FIT_ROWS, rng)  # stratified: the relaxed rows' own margins, not a draw's
    sample = decode_codes(relaxed, domain, rows, rng, stratified_uniforms(rows, len(domain.blocks), rng))
    ridge = tilt_ridge(noise_std)
    codes, numerics = public.codes, public.numerics
    if len(codes) > PUBLIC_FIT_ROWS:
        chosen = np.sort(rng.choice(len(codes), PUBLIC_FIT_ROWS, replace=False))
        codes, numerics = codes[chosen], numerics[chosen]
        logger.info("label model: fitted on %d of the public table's %d rows", PUBLIC_FIT_ROWS, public.n_rows)
    share = redraw_share(noise_std)
    logger.info("label model: the public table's conditional tilted with ridge %.3g, redrawing %.0f%% of the "
                "labels (measured label margins' noise std %.3g)", ridge, 100 * share, noise_std)
    return fit_label_model(codes, numerics, public.filled_blocks, sample, domain, ridge, share)
