"""Numeric coupling at decoding: whether a decoded row's numeric values stay together.

A relaxed row holds label probabilities and one value per numeric column; decoding gives it
about ``n_rows / n_relaxed`` output rows that all carry those values. Within a label value the
output's numeric joint distribution is then a mixture of a thousand points whose pairing the
fit barely constrains: the projection places each relaxed row's numerics to serve every label
in proportion to its probability of it, so that rows which are partly of one label and partly
of another carry values typical of both in *every* numeric column, a dependence between the
numeric columns within each label that the real rows need not have. On acs-income-CA and
Adult the fitted pairing answered the suite's class-conditional thresholds and mixed marginals
worse than no pairing at all (``bench/results/ablation_numeric_coupling.md``).

Two couplings:

- ``"fitted"``: each output row keeps its relaxed row's numeric values together (the paper's).
- ``"label"``: each numeric column's values are permuted among the output rows of the same
  label value(s) (and, for a nullable column, among its non-null rows), each column by its own
  permutation. Every column's distribution within each label value, its null pattern and
  everything categorical are unchanged; the numeric columns become independent of each other,
  and of the categorical features, given the labels. Tables without a label keep ``"fitted"``
  (there is nothing to condition on).

Either is post-processing of the released relaxed rows (the permutation reads no private
data), so neither changes the privacy guarantee.
"""

from __future__ import annotations

import numpy as np

from polars_rap.schema.domain import Domain

from polars_rap.fit.strategy_checks import NUMERIC_COUPLINGS, check_numeric_coupling
from polars_rap.kernels.cpu_sampling import value_then_key_order

__all__ = ["NUMERIC_COUPLINGS", "check_numeric_coupling", "decouple_numerics", "label_groups", "redrawn_pools"]




def decouple_numerics(codes: np.ndarray, numerics: np.ndarray, domain: Domain,
                      rng: np.random.Generator, pool_codes: np.ndarray | None = None,
                      anchor: np.ndarray | None = None) -> np.ndarray:
    """float64[n, n_numeric]: ``numerics`` (decoded rows' mapped values, one column per numeric
    column of ``domain``) with each column permuted within the groups of rows sharing their
    label codes (``codes``: int32[n, n_blocks]) and, for a nullable column, its null indicator:
    the ``"label"`` coupling. Unchanged (the same array) without labels or numeric columns.

    ``pool_codes`` (int32[n, n_blocks], the rows' codes before a public label model redrew their
    labels): each label group's values are then drawn from the rows that held that label
    *before* the redraw (without replacement while they last, then with), so that every numeric
    column's distribution within each label stays the one the projection fitted, whichever rows
    now carry the label (:func:`redrawn_pools`).

    ``anchor`` (bool[n], :mod:`polars_rap.decode.anchors`): the anchors are permuted among
    themselves, and every other row takes the value of a random anchor of its group (its own
    where the group has no anchor).

    >>> import polars as pl
    >>> domain = Domain.from_mapping({"y": pl.String, "a": pl.Float64, "b": pl.Float64},
    ...                              {"y": ["n", "p"], "a": (0.0, 1.0), "b": (0.0, 1.0)}, labels=["y"])
    >>> codes = np.array([[0], [0], [0], [1], [1], [1]], dtype=np.int32)
    >>> numerics = np.array([[0.1, 0.1], [0.2, 0.2], [0.3, 0.3], [0.7, 0.7], [0.8, 0.8], [0.9, 0.9]])
    >>> out = decouple_numerics(codes, numerics, domain, np.random.default_rng(0))
    >>> [sorted(out[:3, j]) == [0.1, 0.2, 0.3] and sorted(out[3:, j]) == [0.7, 0.8, 0.9] for j in range(2)]
    [True, True]
    """
    labels = [i for i, block in enumerate(domain.blocks) if block.is_label]
    n_rows = numerics.shape[0]
    if not labels or numerics.shape[1] == 0 or n_rows < 2:
        return numerics
    if pool_codes is not None:
        return redrawn_pools(codes, pool_codes, numerics, domain, labels, rng, anchor)
    label_group = label_groups(codes, labels)
    if anchor is not None:
        return _anchored(codes, numerics, domain, label_group, anchor, rng)
    out = numerics.copy()
    for j, spec in enumerate(domain.numeric_columns):
        group = _with_null_state(label_group, codes, domain, spec)
        by_group = np.argsort(group, kind="stable")
        shuffled = value_then_key_order(group, rng.random(n_rows))  # the same groups, each in a random order
        out[by_group, j] = numerics[shuffled, j]
    return out


def redrawn_pools(codes: np.ndarray, pool_codes: np.ndarray, numerics: np.ndarray, domain: Domain,
                  labels: list[int], rng: np.random.Generator, anchor: np.ndarray | None = None) -> np.ndarray:
    """float64[n, n_numeric]: :func:`decouple_numerics` after a label redraw. For each numeric
    column and each group of rows sharing their labels (``codes``, after the redraw) and null
    indicator, values drawn from the group's *pool*: the rows that held those labels before the
    redraw (``pool_codes``) and the same null indicator (the redraw moves labels only). A pool
    gives each value once, in a random order, then (where the group outgrew its pool) draws with
    replacement; a group whose pool is empty keeps its rows' own values. With ``anchor``
    (bool[n]) the pools hold anchors only, anchors are served as above and the other rows draw
    from their group's pool with replacement."""
    n_rows = numerics.shape[0]
    _, label_group = np.unique(np.concatenate([codes[:, labels], pool_codes[:, labels]]), axis=0,
                               return_inverse=True)
    label_group = label_group.reshape(-1).astype(np.int64)
    after, before = label_group[:n_rows], label_group[n_rows:]
    out = numerics.copy()
    for j, spec in enumerate(domain.numeric_columns):
        group_after = _with_null_state(after, codes, domain, spec)  # the redraw moves labels only:
        group_before = _with_null_state(before, codes, domain, spec)  # the null indicators are the same
        for group in np.unique(group_after):
            targets = np.flatnonzero(group_after == group)
            pool = np.flatnonzero(group_before == group)
            if anchor is not None:
                pool = pool[anchor[pool]]
                if len(pool) == 0:
                    continue
                others = targets[~anchor[targets]]
                out[others, j] = numerics[rng.choice(pool, len(others)), j]
                targets = targets[anchor[targets]]
            if len(pool) == 0:
                continue
            drawn = rng.permutation(pool)[:len(targets)]
            if len(targets) > len(pool):
                drawn = np.concatenate([drawn, rng.choice(pool, len(targets) - len(pool))])
            out[targets, j] = numerics[drawn, j]
    return out


def _anchored(codes: np.ndarray, numerics: np.ndarray, domain: Domain, label_group: np.ndarray,
              anchor: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """:func:`decouple_numerics` with anchors (bool[n]): the anchors permuted among themselves
    within each group, every other row given a random anchor's value of its group."""
    out = numerics.copy()
    anchors, others = np.flatnonzero(anchor), np.flatnonzero(~anchor)
    for j, spec in enumerate(domain.numeric_columns):
        group = _with_null_state(label_group, codes, domain, spec)
        anchor_group = group[anchors]
        by_group = np.argsort(anchor_group, kind="stable")
        shuffled = value_then_key_order(anchor_group, rng.random(len(anchors)))
        out[anchors[by_group], j] = numerics[anchors[shuffled], j]
        other_group = group[others]  # its anchors lie at by_group[start:start + count]
        counts = np.bincount(anchor_group, minlength=int(group.max(initial=0)) + 1)
        start, count = (np.cumsum(counts) - counts)[other_group], counts[other_group]
        pick = start + np.floor(rng.random(len(others)) * count).astype(np.int64)
        has = count > 0
        out[others[has], j] = numerics[anchors[by_group[pick[has]]], j]
    return out


def label_groups(codes: np.ndarray, labels: list[int]) -> np.ndarray:
    """int64[n]: a group id per row of ``codes`` (int32[n, n_blocks]) shared by the rows of the
    same codes in every block of ``labels`` (block indices), numbered in the order of the codes
    (lexicographic, as ``np.unique(codes[:, labels], axis=0)`` numbers them)."""
    key = np.zeros(len(codes), dtype=np.int64)
    for b in labels:  # mixed radix: the same order as the rows of codes, one 1-D unique instead of a row-wise one
        column = codes[:, b].astype(np.int64)
        key = key * (int(column.max(initial=0)) + 1) + column
    _, group = np.unique(key, return_inverse=True)
    return group.reshape(-1).astype(np.int64)


def _with_null_state(label_group: np.ndarray, codes: np.ndarray, domain: Domain, spec) -> np.ndarray:
    """int64[n]: each row's label group, split by its null indicator for a nullable numeric
    column ``spec`` (nulls stay where they are: their rows form groups of their own)."""
    if not spec.nullable:
        return label_group
    return label_group * 2 + (codes[:, domain.block_index(spec.name, indicator=True)] == 1)
