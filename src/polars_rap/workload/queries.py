"""Product queries in CSR form: the one shape every kernel reads.

A product query ``q`` is a set of one-hot coordinates ``C_q`` of the relaxed matrix times a
set of halfspaces ``H_q`` over the numeric coordinates (design.md §3)::

    exact:    q(x) = prod_{c in C_q} 1[x_c = 1] * prod_{h in H_q} 1[theta_h . x <= tau_h]
    relaxed:  q(x) = prod_{c in C_q} x_c        * prod_{h in H_q} s(sigma_q (tau_h - theta_h . x))

and its answer on a dataset is the mean over rows.

Nullable numeric columns. A null numeric value is encoded as scaled 0 plus a two-code
null-indicator block whose code 1 means null (``polars_rap.schema.encoding``); decoding gives a copy
whose indicator samples code 1 a null, which reads as 0 again. So a relaxed row's value of a
halfspace is the expectation over its null indicators, exactly what decoding realises. With
``J_h`` the nullable columns of halfspace ``h`` and ``q_j = X[r, null_coord[j]]`` the row's
probability that column ``j`` is null::

    relaxed halfspace factor = sum_{S subset of J_h} prod_{j in S} q_j prod_{j in J_h - S} (1 - q_j)
                               * s(sigma (tau_h - theta_h . x with x_j := 0 for j in S))

Patterns ``S`` are enumerated as bit masks ``0 .. 2^|J_h| - 1`` (bit ``k``: the ``k``-th
nullable entry of the halfspace in stored order), and each pattern's dot product is accumulated
term by term with the null entries left out, so that at ``sigma = inf`` it is the exact
answer's dot product of that pattern to the bit. A halfspace without nullable columns has the
single pattern ``S = {}`` of weight 1: the plain factor, bit for bit. Exact answers need
nothing of this (a null row sits at 0 already).

The sum has ``2^|J_h|`` terms, so it runs exactly over the first
``EXACT_NULLABLE_PER_HALFSPACE`` nullable entries of a halfspace (stored order) only; each
further nullable column enters every pattern's dot product at its expected value
``(1 - q_j) x_j`` (exact when ``q_j`` is 0 or 1; at ``sigma = inf`` its gradient is zero, like
a numeric's). Linear thresholds span every numeric column, and inferred domains make every
numeric column nullable, so such halfspaces do occur. A nullable column appears in at most
one halfspace of a query, and a query never also holds a coordinate of that column's
null-indicator block (the product form would treat dependent factors as independent).

Layout of the relaxed matrix ``X`` (``float32[n_rows, n_coords]``): first one block of
probabilities per categorical column (``n_categorical_coords`` coordinates in all), then one
coordinate per numeric column, mapped to ``[0, 1]`` by the column's public bounds (and its
declared scale and atoms, :mod:`polars_rap.schema.transforms`).
``numeric_offset == n_categorical_coords`` is where the numeric block starts.

Real data is read as ``codes`` (``int32[n_rows, n_categorical_columns]``, one category code per
categorical column) and ``numerics`` (``float64[n_rows, n_numeric]``, scaled to ``[0, 1]``).
Coordinate ``c`` of ``X`` stands for ``codes[:, coord_column[c]] == coord_code[c]``.

Queries are stored sorted by *group* (the unit of selection and measurement): group ``g`` is
queries ``group_offsets[g]:group_offsets[g + 1]``. A group whose ``group_columns`` are not empty
is a *marginal group*: its queries are all the cells of those categorical columns in row-major
order (C order, last column fastest), and every query in it shares the same halfspaces. Kernels
may use that structure to count a whole group in one pass; the CSR arrays stay the definition.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from polars_rap.errors import ParameterError

__all__ = [
    "CLASS_CODES", "EXACT_NULLABLE_PER_HALFSPACE", "QueryClass", "QuerySet", "categorical_layout", "group_l1",
]

#: Nullable numeric columns of one halfspace whose null patterns are summed exactly (the
#: first ones in stored order): ``2 ** count`` patterns, each a dot product over the
#: halfspace. Further nullable columns enter at their expected value. README, Backends,
#: "Nullable numeric columns in thresholds", has the measured cost (16-24x a plain
#: halfspace's at 4 exact columns; all 6 exact measured 66x).
EXACT_NULLABLE_PER_HALFSPACE = 4


class QueryClass:
    """Integer tags of the query classes, stored per query and per group (``int8``)."""

    CATEGORICAL_MARGINAL = 0
    MIXED_MARGINAL = 1
    LINEAR_THRESHOLD = 2
    NULL_RATE = 3  # a nullable block (x each label): polars_rap.fit.null_rates
    BASE_MARGINAL = 4  # every feature block x each label, measured first: polars_rap.fit.base_marginals
    NUMERIC_HISTOGRAM = 5  # prefixes of each numeric column's histogram x label: polars_rap.fit.numeric_histograms
    NAMES = ("categorical_marginal", "mixed_marginal", "linear_threshold", "null_rate", "base_marginal",
             "numeric_histogram")
    SHORT = ("CM", "MM", "LT", "NR", "BM", "NH")


CLASS_CODES = {short: code for code, short in enumerate(QueryClass.SHORT)}
"""A query class's short name (a plan step's ``query_class``: ``"CM"``, ...) -> its
:class:`QueryClass` tag."""


def categorical_layout(column_sizes) -> dict:
    """The layout fields of a :class:`QuerySet` for categorical columns of ``column_sizes``
    (coordinates block by block): ``coord_column``, ``coord_code`` (int32[n_coords]),
    ``column_sizes`` (int32[n_columns]) and ``numeric_offset`` (int)."""
    sizes = np.asarray(column_sizes, dtype=np.int32)
    coord_code = [np.arange(k, dtype=np.int32) for k in sizes] or [np.zeros(0, np.int32)]
    return dict(
        coord_column=np.repeat(np.arange(len(sizes), dtype=np.int32), sizes),
        coord_code=np.concatenate(coord_code).astype(np.int32),
        column_sizes=sizes,
        numeric_offset=int(sizes.sum()),
    )


def _offsets(lengths: np.ndarray) -> np.ndarray:
    out = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def group_l1(differences: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """float64[n_groups]: the L1 norm of ``differences`` over consecutive groups of ``sizes``
    (the answers of several groups concatenated in group order)."""
    if len(sizes) == 0:
        return np.zeros(0)
    return np.add.reduceat(np.abs(np.asarray(differences, dtype=np.float64)), _offsets(sizes)[:-1])


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class QuerySet:
    """A set of product queries in CSR form, grouped for selection and measurement.

    Immutable: the kernel backends check a query set's arrays once, on its first use, and
    trust them from then on (:func:`polars_rap.kernels._checks.check_queries`), so they must
    never be written in place; derive a new set instead (:meth:`take_groups`, ``concatenate``).

    Attributes
    ----------
    cat_offsets : int64[n_queries + 1]
        Query ``q`` reads coordinates ``cat_coords[cat_offsets[q]:cat_offsets[q + 1]]``.
    cat_coords : int32[nnz_cat]
        Categorical coordinates (columns of ``X``, all ``< numeric_offset``).
    halfspace_offsets : int64[n_queries + 1]
        Query ``q`` multiplies halfspaces ``halfspace_offsets[q]:halfspace_offsets[q + 1]``.
    theta_offsets : int64[n_halfspaces + 1]
        Halfspace ``h`` has weights ``theta_weight[theta_offsets[h]:theta_offsets[h + 1]]``.
    theta_index : int32[nnz_theta]
        Numeric column of each weight (``0 .. n_numeric - 1``; in ``X`` it is
        ``numeric_offset + theta_index``).
    theta_weight : float32[nnz_theta]
        Halfspace normal vector entries, in scaled ``[0, 1]`` units.
    tau : float32[n_halfspaces]
        Halfspace thresholds: the halfspace holds where ``theta . x <= tau``.
    query_class : int8[n_queries]
        ``QueryClass`` tag of each query.
    group_offsets : int64[n_groups + 1]
        Group ``g`` is queries ``group_offsets[g]:group_offsets[g + 1]``.
    group_column_offsets : int64[n_groups + 1]
        Group ``g`` enumerates the categorical columns
        ``group_columns[group_column_offsets[g]:group_column_offsets[g + 1]]`` (empty for a
        single-query group).
    group_columns : int32[nnz_group_columns]
        Categorical column indices (into ``codes``) of marginal groups.
    coord_column : int32[numeric_offset]
        Categorical column of each categorical coordinate.
    coord_code : int32[numeric_offset]
        Category code of each categorical coordinate.
    column_sizes : int32[n_categorical_columns]
        Number of categories (coordinates) of each categorical column.
    numeric_offset : int
        First numeric coordinate of ``X`` (= number of categorical coordinates).
    n_numeric : int
        Number of numeric coordinates.
    null_coord : int32[n_numeric]
        For each numeric column, the coordinate of ``X`` that holds the probability that it is
        null (code 1 of its two-code null-indicator block), or -1 when the column is not
        nullable. Halfspaces over nullable columns are relaxed as the expectation over those
        indicators (module docstring). Defaults to all -1 (no nullable numeric column).
    """

    cat_offsets: np.ndarray
    cat_coords: np.ndarray
    halfspace_offsets: np.ndarray
    theta_offsets: np.ndarray
    theta_index: np.ndarray
    theta_weight: np.ndarray
    tau: np.ndarray
    query_class: np.ndarray
    group_offsets: np.ndarray
    group_column_offsets: np.ndarray
    group_columns: np.ndarray
    coord_column: np.ndarray
    coord_code: np.ndarray
    column_sizes: np.ndarray
    numeric_offset: int
    n_numeric: int
    null_coord: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.null_coord is None:
            object.__setattr__(self, "null_coord", np.full(int(self.n_numeric), -1, dtype=np.int32))

    # ------------------------------------------------------------------ sizes
    @property
    def n_queries(self) -> int:
        return len(self.cat_offsets) - 1

    @property
    def n_groups(self) -> int:
        return len(self.group_offsets) - 1

    @property
    def n_coords(self) -> int:
        return self.numeric_offset + self.n_numeric

    @property
    def group_sizes(self) -> np.ndarray:
        """int64[n_groups]: number of queries in each group."""
        return np.diff(self.group_offsets)

    @property
    def group_class(self) -> np.ndarray:
        """int8[n_groups]: class of each group (the class of its first query)."""
        if self.n_groups == 0:
            return np.zeros(0, dtype=np.int8)
        return self.query_class[self.group_offsets[:-1]]

    def group_of_query(self) -> np.ndarray:
        """int64[n_queries]: the group each query belongs to."""
        return np.repeat(np.arange(self.n_groups, dtype=np.int64), self.group_sizes)

    def columns_of(self, group: int) -> np.ndarray:
        """int32[c]: the categorical block ids a group enumerates, in its cells' row-major order
        (empty for a group that enumerates none)."""
        return self.group_columns[self.group_column_offsets[group]:self.group_column_offsets[group + 1]]

    def marginal_shape(self, group: int) -> tuple[int, ...]:
        """Category counts of the columns a marginal group enumerates: its cells' row-major
        shape (a CM group's is ``(|A|, |B|, |label|)``)."""
        return tuple(int(self.column_sizes[c]) for c in self.columns_of(group))

    # ------------------------------------------------------------ selection
    def take_groups(self, groups: np.ndarray) -> "QuerySet":
        """The query set made of ``groups`` (int indices, in the given order).

        Queries keep their order inside each group; the layout arrays are shared.
        """
        groups = np.asarray(groups, dtype=np.int64)
        starts = self.group_offsets[groups]
        stops = self.group_offsets[groups + 1]
        queries = _ranges(starts, stops)
        new_group_offsets = _offsets(stops - starts)
        col_starts = self.group_column_offsets[groups]
        col_stops = self.group_column_offsets[groups + 1]
        group_columns = self.group_columns[_ranges(col_starts, col_stops)]
        return self._take_queries(
            queries, new_group_offsets, _offsets(col_stops - col_starts), group_columns
        )

    def group_query_indices(self, groups: np.ndarray) -> np.ndarray:
        """int64[...]: indices of all queries of ``groups``, group by group."""
        groups = np.asarray(groups, dtype=np.int64)
        return _ranges(self.group_offsets[groups], self.group_offsets[groups + 1])

    def _take_queries(self, queries, group_offsets, group_column_offsets, group_columns):
        cat_starts = self.cat_offsets[queries]
        cat_stops = self.cat_offsets[queries + 1]
        hs_starts = self.halfspace_offsets[queries]
        hs_stops = self.halfspace_offsets[queries + 1]
        halfspaces = _ranges(hs_starts, hs_stops)
        th_starts = self.theta_offsets[halfspaces]
        th_stops = self.theta_offsets[halfspaces + 1]
        thetas = _ranges(th_starts, th_stops)
        return QuerySet(
            cat_offsets=_offsets(cat_stops - cat_starts),
            cat_coords=self.cat_coords[_ranges(cat_starts, cat_stops)],
            halfspace_offsets=_offsets(hs_stops - hs_starts),
            theta_offsets=_offsets(th_stops - th_starts),
            theta_index=self.theta_index[thetas],
            theta_weight=self.theta_weight[thetas],
            tau=self.tau[halfspaces],
            query_class=self.query_class[queries],
            group_offsets=group_offsets,
            group_column_offsets=group_column_offsets,
            group_columns=group_columns.astype(np.int32, copy=False),
            coord_column=self.coord_column,
            coord_code=self.coord_code,
            column_sizes=self.column_sizes,
            numeric_offset=self.numeric_offset,
            n_numeric=self.n_numeric,
            null_coord=self.null_coord,
        )

    @classmethod
    def from_lists(
        cls,
        queries: list[tuple[list[int], list[tuple[list[int], list[float], float]]]],
        group_sizes: list[int],
        group_columns: list[list[int]],
        column_sizes: list[int],
        n_numeric: int,
        query_class: list[int] | None = None,
        null_coord: list[int] | None = None,
    ) -> "QuerySet":
        """Build from plain Python lists (tests, small workloads).

        ``queries[q] = (categorical coords, [(theta_index, theta_weight, tau), ...])``;
        ``group_sizes`` partitions the queries in order; ``group_columns[g]`` lists the
        categorical columns a marginal group enumerates (``[]`` for a single-query group);
        ``null_coord[j]`` is the null-code coordinate of numeric column ``j`` or -1 (all -1
        when None).
        """
        halfspaces = [h for _, hs in queries for h in hs]
        return cls(
            cat_offsets=_offsets(np.array([len(c) for c, _ in queries], dtype=np.int64)),
            cat_coords=np.array([c for cs, _ in queries for c in cs], dtype=np.int32),
            halfspace_offsets=_offsets(np.array([len(hs) for _, hs in queries], dtype=np.int64)),
            theta_offsets=_offsets(np.array([len(i) for i, _, _ in halfspaces], dtype=np.int64)),
            theta_index=np.array([j for i, _, _ in halfspaces for j in i], dtype=np.int32),
            theta_weight=np.array([w for _, ws, _ in halfspaces for w in ws], dtype=np.float32),
            tau=np.array([t for _, _, t in halfspaces], dtype=np.float32),
            query_class=np.asarray(
                query_class if query_class is not None else [0] * len(queries), dtype=np.int8
            ),
            group_offsets=_offsets(np.asarray(group_sizes, dtype=np.int64)),
            group_column_offsets=_offsets(np.array([len(c) for c in group_columns], np.int64)),
            group_columns=np.array([c for cs in group_columns for c in cs], dtype=np.int32),
            n_numeric=int(n_numeric),
            null_coord=None if null_coord is None else np.asarray(null_coord, dtype=np.int32),
            **categorical_layout(column_sizes),
        )

    @classmethod
    def concatenate(cls, parts: list["QuerySet"]) -> "QuerySet":
        """One query set holding ``parts`` one after the other (same layout required)."""
        if not parts:
            raise ParameterError("concatenate needs at least one query set")
        first = parts[0]
        for part in parts[1:]:
            if (part.numeric_offset != first.numeric_offset or part.n_numeric != first.n_numeric
                    or not np.array_equal(part.null_coord, first.null_coord)):
                raise ParameterError("query sets built on different domains cannot be concatenated")

        def cat_offsets_of(name: str) -> np.ndarray:
            lengths = np.concatenate([np.diff(getattr(p, name)) for p in parts])
            return _offsets(lengths)

        return cls(
            cat_offsets=cat_offsets_of("cat_offsets"),
            cat_coords=np.concatenate([p.cat_coords for p in parts]).astype(np.int32),
            halfspace_offsets=cat_offsets_of("halfspace_offsets"),
            theta_offsets=cat_offsets_of("theta_offsets"),
            theta_index=np.concatenate([p.theta_index for p in parts]).astype(np.int32),
            theta_weight=np.concatenate([p.theta_weight for p in parts]).astype(np.float32),
            tau=np.concatenate([p.tau for p in parts]).astype(np.float32),
            query_class=np.concatenate([p.query_class for p in parts]).astype(np.int8),
            group_offsets=cat_offsets_of("group_offsets"),
            group_column_offsets=cat_offsets_of("group_column_offsets"),
            group_columns=np.concatenate([p.group_columns for p in parts]).astype(np.int32),
            coord_column=first.coord_column,
            coord_code=first.coord_code,
            column_sizes=first.column_sizes,
            numeric_offset=first.numeric_offset,
            n_numeric=first.n_numeric,
            null_coord=first.null_coord,
        )


def _ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """int64 concatenation of ``arange(start, stop)`` for each pair, without a Python loop."""
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(stops, dtype=np.int64) - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    keep = lengths > 0
    starts, lengths = starts[keep], lengths[keep]
    steps = np.ones(total, dtype=np.int64)
    heads = _offsets(lengths)[:-1]
    steps[0] = starts[0]
    steps[heads[1:]] = starts[1:] - (starts[:-1] + lengths[:-1] - 1)
    return np.cumsum(steps)
