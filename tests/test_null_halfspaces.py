"""Halfspaces over nullable numeric columns: the relaxed value is the expectation over the
null indicators, as decoding realises it (a null copy reads as scaled 0).

Checks the reference and the CPU kernels (both paths) against each other and against finite
differences, the hard-threshold value against the Monte-Carlo mean of exact answers over
decodings, and that domains without nullable numerics keep the plain factor to the bit.
The CUDA kernels get the same problem in ``test_kernels_cuda.py``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from polars_rap.schema.domain import Domain
from polars_rap.decode.decoding import decode
from polars_rap.schema.encoding import encode
from polars_rap.kernels import cpu, reference
from polars_rap.workload.queries import EXACT_NULLABLE_PER_HALFSPACE, QueryClass, QuerySet
from polars_rap.workload.builders import build_workload, linear_thresholds

BACKENDS = {"reference": reference, "cpu": cpu}

# Blocks: a feature (3), the label (2), the null indicators of numerics 0 and 1 (2 each).
# Numerics 0 and 1 are nullable, numeric 2 is not.
COLUMN_SIZES = [3, 2, 2, 2]
N_NUMERIC = 3
NULL_COORD = [5 + 1, 7 + 1, -1]  # code 1 (null) of blocks 2 and 3
LABEL = 1


def null_queries() -> QuerySet:
    """Halfspaces reading 0, 1 and 2 nullable columns, in marginal groups (structured path)
    and single queries (CSR path), several halfspaces per query, an indicator marginal."""
    queries, group_sizes, group_columns, classes = [], [], [], []

    def marginal(columns, halfspaces):
        shape = [COLUMN_SIZES[c] for c in columns]
        starts = np.cumsum(COLUMN_SIZES) - COLUMN_SIZES
        for cell in np.ndindex(*shape):
            queries.append(([int(starts[c] + k) for c, k in zip(columns, cell)], halfspaces))
        group_sizes.append(int(np.prod(shape)))
        group_columns.append(list(columns))
        classes.extend([QueryClass.MIXED_MARGINAL] * int(np.prod(shape)))

    def single(coords, halfspaces):
        queries.append((coords, halfspaces))
        group_sizes.append(1)
        group_columns.append([])
        classes.append(QueryClass.LINEAR_THRESHOLD)

    marginal([LABEL], [([0], [1.0], 0.4), ([2], [1.0], 0.7)])  # 1 nullable + plain prefix
    marginal([0, LABEL], [([0], [1.0], 0.55), ([1], [1.0], 0.3)])  # 2 nullable, 2 halfspaces
    marginal([2, LABEL], [])  # the null indicator of numeric 0 x label, no halfspace
    single([3], [([0, 1, 2], [0.8, -0.5, 0.6], 0.2)])  # 2 nullable in one halfspace
    single([4], [([2, 1], [-0.7, 0.9], 0.1)])  # 1 nullable, stored second
    single([3], [([2], [1.0], 0.5)])  # plain
    single([], [([0, 2], [0.6, 0.6], 0.5), ([1], [-1.0], -0.35)])  # pure halfspaces
    single([0, 4], [([1, 0], [0.5, 0.5], 0.3)])
    single([], [])
    return QuerySet.from_lists(queries, group_sizes, group_columns, COLUMN_SIZES, N_NUMERIC,
                               classes, null_coord=NULL_COORD)


def relaxed(rng, n_rows, dtype=np.float64):
    blocks = [rng.dirichlet(np.ones(k), size=n_rows) for k in COLUMN_SIZES]
    X = np.hstack([*blocks, rng.random((n_rows, N_NUMERIC))])
    X[0, 5:9] = [0.0, 1.0, 1.0, 0.0]  # a row surely null in numeric 0, surely not in 1
    X[1, [9, 10]] = 0.0  # numerics at the lower bound, where a null sits too
    return X.astype(dtype)


# Wide: the label, then 6 nullable numerics (indicator blocks 1..6): halfspaces over more
# nullable columns than EXACT_NULLABLE_PER_HALFSPACE, the rest at their expected value.
WIDE_NUMERIC = EXACT_NULLABLE_PER_HALFSPACE + 2
WIDE_SIZES = [2] + [2] * WIDE_NUMERIC
WIDE_NULL_COORD = [2 + 2 * j + 1 for j in range(WIDE_NUMERIC)]


def wide_queries() -> QuerySet:
    """A marginal group and single queries over halfspaces reading 6 and 5 nullable columns
    (in and out of stored order), beside a plain prefix-free query."""
    every = list(range(WIDE_NUMERIC))
    weights = [0.5, -0.4, 0.3, 0.45, -0.35, 0.4]
    spec = [([0], [(every, weights, 0.3)]), ([1], [(every, weights, 0.3)]),
            ([1], [(every[::-1][:5], [0.3, -0.5, 0.4, 0.2, 0.5], 0.25)]),
            ([], [(every, [0.2] * WIDE_NUMERIC, 0.5), ([], [], 0.0)]), ([0], [])]
    return QuerySet.from_lists(spec, [2, 1, 1, 1], [[0], [], [], []], WIDE_SIZES, WIDE_NUMERIC,
                               null_coord=WIDE_NULL_COORD)


def wide_relaxed(rng, n_rows, dtype=np.float64):
    blocks = [rng.dirichlet(np.ones(k), size=n_rows) for k in WIDE_SIZES]
    return np.hstack([*blocks, rng.random((n_rows, WIDE_NUMERIC))]).astype(dtype)


def _assert_close(actual, expected, rtol):
    scale = max(float(np.max(np.abs(expected), initial=0.0)), 1e-30)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


def _central_differences(kernels, X, queries, targets, sigma, step=1e-6):
    grad = np.zeros_like(X)
    for index in np.ndindex(*X.shape):
        up, down = X.copy(), X.copy()
        up[index] += step
        down[index] -= step
        grad[index] = (kernels.loss_and_grad(up, queries, targets, sigma)[0]
                       - kernels.loss_and_grad(down, queries, targets, sigma)[0]) / (2 * step)
    return grad


# ----------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("sigma", [3.0, 30.0])
@pytest.mark.parametrize("wide", [False, True], ids=["narrow", "wide"])
def test_gradient_matches_central_finite_differences(backend, sigma, wide):
    """The gradient (numerics and null-code probabilities alike) is that of the loss, also
    for halfspaces with nullable columns past the exact ones (wide)."""
    rng = np.random.default_rng(0)
    queries = wide_queries() if wide else null_queries()
    X = wide_relaxed(rng, 5) if wide else relaxed(rng, 7)
    targets = rng.random(queries.n_queries)
    kernels = BACKENDS[backend]
    _, grad = kernels.loss_and_grad(X, queries, targets, sigma)
    _assert_close(grad, _central_differences(kernels, X, queries, targets, sigma), 1e-5)


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_hard_thresholds_keep_the_gradient_through_null_probabilities(backend):
    """At sigma = inf the value is linear in each q_j: finite differences in the null-code
    coordinates match the gradient exactly, and numerics get none."""
    rng = np.random.default_rng(1)
    queries = null_queries()
    X = relaxed(rng, 6)
    targets = rng.random(queries.n_queries)
    kernels = BACKENDS[backend]
    _, grad = kernels.loss_and_grad(X, queries, targets, np.inf)
    numeric = slice(queries.numeric_offset, None)
    assert np.all(grad[:, numeric] == 0.0)
    expected = _central_differences(kernels, X, queries, targets, np.inf, step=1e-4)
    null_columns = [c for c in NULL_COORD if c >= 0]
    assert np.abs(grad[:, null_columns]).max() > 1e-3
    _assert_close(grad[:, null_columns], expected[:, null_columns], 1e-6)


# ------------------------------------------------------------------------ backend agreement
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("sigma", [3.0, 1e4, np.inf])
@pytest.mark.parametrize("wide", [False, True], ids=["narrow", "wide"])
def test_cpu_matches_reference(sigma, dtype, wide):
    """CPU answers, loss and gradient equal the reference's, on both CPU paths (marginal
    groups walked as a whole, and every query through CSR)."""
    rng = np.random.default_rng(2)
    queries = wide_queries() if wide else null_queries()
    # several row blocks
    X = wide_relaxed(rng, 300, dtype) if wide else relaxed(rng, 300, dtype)
    targets = rng.random(queries.n_queries)
    rtol = 1e-5 if dtype == np.float32 else 1e-10
    _assert_close(cpu.answers_relaxed(X, queries, sigma),
                  reference.answers_relaxed(X, queries, sigma), max(rtol, 1e-6))
    checked_sigma = np.full(queries.n_queries, sigma, dtype=np.float32)
    expected = reference._relaxed64(X, queries, checked_sigma)  # before the float32 rounding
    loss, grad = reference.loss_and_grad(X, queries, targets, sigma)
    for structured in (True, False):
        answers, cpu_loss, cpu_grad = cpu._relaxed(X, queries, checked_sigma, targets,
                                                   structured=structured)
        _assert_close(answers, expected, rtol)
        assert cpu_loss == pytest.approx(loss, rel=rtol)
        _assert_close(cpu_grad, grad, 10 * rtol)


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("wide", [False, True], ids=["narrow", "wide"])
def test_hard_relaxed_answers_on_one_hot_data_equal_exact_answers(backend, wide):
    """On a one-hot relaxed matrix, sigma = inf gives the exact answers of the data it
    stands for, nulls read as 0 — to the bit (the null pattern's dot product leaves the
    null entries out, as a 0 adds nothing; past the exact ones, (1 - q) x is x or 0)."""
    rng = np.random.default_rng(3)
    queries = wide_queries() if wide else null_queries()
    sizes, null_coord = (WIDE_SIZES, WIDE_NULL_COORD) if wide else (COLUMN_SIZES, NULL_COORD)
    n_rows = 64
    codes = np.stack([rng.integers(0, k, size=n_rows) for k in sizes], axis=1)
    X = np.zeros((n_rows, queries.n_coords))
    starts = np.cumsum(sizes) - sizes
    for b, start in enumerate(starts):
        X[np.arange(n_rows), start + codes[:, b]] = 1.0
    X[:, queries.numeric_offset:] = np.round(rng.random((n_rows, queries.n_numeric)), 2)
    numerics = X[:, queries.numeric_offset:].copy()
    for j, coord in enumerate(null_coord):
        if coord >= 0:
            numerics[X[:, coord] == 1.0, j] = 0.0
    kernels = BACKENDS[backend]
    exact = kernels.answers_exact(codes.astype(np.int32), numerics, queries)
    np.testing.assert_array_equal(kernels.answers_relaxed(X, queries, np.inf),
                                  exact.astype(np.float32))


# ----------------------------------------------------------------- what decoding realises
def _nullable_domain() -> Domain:
    schema = {"age": pl.Float64, "commute": pl.Float64, "hours": pl.Float64,
              "sex": pl.Int64, "income": pl.Int64}
    mapping = {"age": (0, 100), "commute": {"bounds": (0, 200), "nullable": True},
               "hours": {"bounds": (0, 100), "nullable": True}, "sex": [1, 2], "income": [0, 1]}
    return Domain.from_mapping(schema, mapping, ["income"])


def test_workload_layout_names_the_null_codes():
    """Workload builders read null_coord off the domain: code 1 of each nullable numeric
    column's indicator block, -1 for the others; a domain without any has all -1."""
    domain = _nullable_domain()
    queries = build_workload(domain, np.random.default_rng(0), classes=("CM", "MM", "LT"),
                             n_mixed_marginals=3, n_linear_thresholds=3)
    names = [spec.name for spec in domain.numeric_columns]
    starts = np.cumsum(domain.block_sizes) - np.asarray(domain.block_sizes)
    expected = [-1 if not domain[n].nullable else int(starts[domain.block_index(n, True)]) + 1
                for n in names]
    np.testing.assert_array_equal(queries.null_coord, expected)
    assert queries.null_coord.dtype == np.int32 and expected.count(-1) == 1
    plain = Domain.from_mapping({"age": pl.Float64, "sex": pl.Int64},
                                {"age": (0, 100), "sex": [1, 2]})
    assert np.all(build_workload(plain, np.random.default_rng(0)).null_coord == -1)


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_hard_relaxed_answers_are_the_mean_exact_answers_of_decodings(backend):
    """At sigma = inf, a relaxed matrix's answer is the expected exact answer of its decoded
    rows (nulls read as 0), within Monte-Carlo error; the old semantics (numeric coordinate
    whatever the null probability) is far outside it on the same queries."""
    domain = _nullable_domain()
    queries = build_workload(domain, np.random.default_rng(1), classes=("MM", "LT"),
                             n_mixed_marginals=10, n_linear_thresholds=20)
    rng = np.random.default_rng(2)
    n_relaxed, copies = 8, 6000
    blocks = [rng.dirichlet(np.ones(k), size=n_relaxed) for k in domain.block_sizes]
    X = np.hstack([*blocks, 0.2 + 0.8 * rng.random((n_relaxed, len(domain.numeric_columns)))])
    X = X.astype(np.float32)
    kernels = BACKENDS[backend]
    frame = decode(X, domain, n_relaxed * copies, np.random.default_rng(3))
    encoded = encode(frame, domain)
    monte_carlo = kernels.answers_exact(encoded.codes, encoded.numerics, queries)
    relaxed_answers = kernels.answers_relaxed(X, queries, np.inf).astype(np.float64)
    n_out = n_relaxed * copies
    # each relaxed row gives exactly `copies` rows: the variance is at most p(1-p)/n_out
    error = np.sqrt(np.maximum(relaxed_answers * (1 - relaxed_answers), 1e-4) / n_out)
    assert np.all(np.abs(monte_carlo - relaxed_answers) <= 4.5 * error + 1e-6)
    old = dataclasses.replace(queries, null_coord=np.full(queries.n_numeric, -1, np.int32))
    old_answers = kernels.answers_relaxed(X, old, np.inf).astype(np.float64)
    assert np.max(np.abs(monte_carlo - old_answers) / error) > 20


# ------------------------------------------------------- no nullable numerics: as before
@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("sigma", [3.0, np.inf])
def test_null_probability_zero_gives_the_plain_factor_to_the_bit(backend, sigma):
    """With q = 0 on every row the mixture is the plain factor: answers, loss and the
    gradient outside the null-code coordinates are identical to those of the same queries
    with no nullable column (null_coord all -1), which is the code path of domains without
    nullable numerics."""
    rng = np.random.default_rng(4)
    queries = null_queries()
    plain = dataclasses.replace(queries, null_coord=np.full(N_NUMERIC, -1, np.int32))
    X = relaxed(rng, 150, np.float32)
    X[:, [5, 7]] = 1.0  # not null
    X[:, [6, 8]] = 0.0  # null
    targets = rng.random(queries.n_queries)
    kernels = BACKENDS[backend]
    np.testing.assert_array_equal(kernels.answers_relaxed(X, queries, sigma),
                                  kernels.answers_relaxed(X, plain, sigma))
    loss, grad = kernels.loss_and_grad(X, queries, targets, sigma)
    plain_loss, plain_grad = kernels.loss_and_grad(X, plain, targets, sigma)
    assert loss == plain_loss
    keep = [c for c in range(queries.n_coords) if c not in (6, 8)]
    np.testing.assert_array_equal(grad[:, keep], plain_grad[:, keep])


# --------------------------------------------------------------------------- refusals
def _with(queries, **changes):
    return dataclasses.replace(queries, **changes)


@pytest.mark.parametrize("case", ["twice", "indicator", "not a null code", "shape"])
def test_unsupported_null_structures_are_refused(case):
    """Every backend refuses, before any kernel runs, what the product form cannot relax
    faithfully: one nullable column in two halfspaces of a query, a halfspace beside its
    column's own null indicator; and a null_coord that is not the null code of a two-code
    block."""
    n_numeric = 3
    sizes = [2] * n_numeric
    null_coord = [2 * j + 1 for j in range(n_numeric)]
    if case == "twice":
        spec = [([], [([0], [1.0], 0.5), ([0, 1], [1.0, 1.0], 0.5)])]
        pattern = "appears twice"
    elif case == "indicator":
        spec = [([1], [([0], [1.0], 0.5)])]
        pattern = "null-indicator block"
    elif case == "not a null code":
        spec = [([], [([0], [1.0], 0.5)])]
        null_coord = [0, *null_coord[1:]]
        pattern = "code 1"
    else:
        spec = [([], [([0], [1.0], 0.5)])]
        pattern = "one entry per numeric column"
    queries = QuerySet.from_lists(spec, [1], [[]], sizes, n_numeric, null_coord=null_coord)
    if case == "shape":
        queries = _with(queries, null_coord=np.asarray(null_coord[:-1], dtype=np.int32))
    X = np.full((2, queries.n_coords), 0.5, dtype=np.float32)
    for kernels in BACKENDS.values():
        with pytest.raises(ValueError, match=pattern):
            kernels.answers_relaxed(X, queries, 3.0)


def test_linear_thresholds_span_any_number_of_nullable_columns():
    """Inferred domains make every numeric column nullable; linear thresholds over more of
    them than the exact count build and relax (the rest at their expected value)."""
    n = EXACT_NULLABLE_PER_HALFSPACE + 2
    names = [f"x{j}" for j in range(n)]
    domain = Domain.from_mapping({**{name: pl.Float64 for name in names}, "y": pl.Int64},
                                 {**{name: {"bounds": (0, 1), "nullable": True} for name in names},
                                  "y": [0, 1]}, ["y"])
    queries = linear_thresholds(domain, 3, np.random.default_rng(0))
    assert np.all(queries.null_coord >= 0)
    X = np.random.default_rng(1).random((4, queries.n_coords))
    np.testing.assert_allclose(cpu.answers_relaxed(X, queries, 3.0),
                               reference.answers_relaxed(X, queries, 3.0), rtol=1e-6)


def test_query_sets_of_different_null_layouts_are_not_concatenated():
    queries = null_queries()
    other = _with(queries, null_coord=np.full(N_NUMERIC, -1, np.int32))
    with pytest.raises(ValueError, match="different domains"):
        QuerySet.concatenate([queries, other])
    assert QuerySet.concatenate([queries, queries]).null_coord is queries.null_coord
    np.testing.assert_array_equal(queries.take_groups([1, 0]).null_coord, NULL_COORD)


# ------------------------------------------------- hard thresholds at a rounding boundary
def _pattern_dots(x, weights, q, mask):
    """(term by term, shortcut) dot products of a halfspace over WIDE_NUMERIC nullable columns
    for one null pattern: the first leaves the pattern's null entries out, as ``reference``
    does; the second takes the pattern without nulls and subtracts their terms, as the CPU
    kernel's shortcut does."""
    def dot(leave_out):
        total = 0.0
        for k in range(WIDE_NUMERIC):
            if k >= EXACT_NULLABLE_PER_HALFSPACE:  # at its expected value
                total += weights[k] * ((1.0 - q) * x[k])
            elif not (leave_out >> k) & 1:
                total += weights[k] * x[k]
        return total

    shortcut = dot(0)
    for k in range(EXACT_NULLABLE_PER_HALFSPACE):
        if (mask >> k) & 1:
            shortcut -= weights[k] * x[k]
    return dot(mask), shortcut


def test_hard_thresholds_where_the_shortcut_rounds_across_keep_the_exact_indicator():
    """A threshold between a null pattern's term-by-term dot product and the CPU kernel's
    shortcut one (the pattern without nulls minus the left-out terms): the kernel's rounding
    bound sends the row to the term-by-term sum, so hard answers equal the reference's to the
    bit. The row's last numeric is searched, ulp by ulp, for such a straddle (float64 rows:
    float32 steps are too coarse to land between the two)."""
    dtype = np.float64
    weights = np.array([0.5, -0.4, 0.3, 0.45, -0.35, 0.4], dtype=np.float32)
    tau = np.float32(0.3)
    q = 0.5
    x = np.array([0.7, 0.2, 0.9, 0.35, 0.6, 0.0], dtype=dtype)
    w64, t64 = weights.astype(np.float64), float(tau)
    straddle = None
    for mask in range(1, 1 << EXACT_NULLABLE_PER_HALFSPACE):
        x[-1] = 0.0
        partial, _ = _pattern_dots(x.astype(np.float64), w64, q, mask)
        candidate = dtype((t64 - partial) / (w64[-1] * (1.0 - q)))
        for _ in range(400):
            x[-1] = candidate
            exact, shortcut = _pattern_dots(x.astype(np.float64), w64, q, mask)
            if (t64 - exact >= 0.0) != (t64 - shortcut >= 0.0):
                straddle = mask
                break
            candidate = np.nextafter(candidate, dtype(2.0))
        if straddle is not None:
            break
    assert straddle is not None, "no straddling row found: the search needs another start"
    queries = QuerySet.from_lists([([], [(list(range(WIDE_NUMERIC)), weights.tolist(), float(tau))])], [1],
                                  [[]], WIDE_SIZES, WIDE_NUMERIC, null_coord=WIDE_NULL_COORD)
    X = np.zeros((1, queries.n_coords), dtype=dtype)
    X[0, : queries.numeric_offset] = 0.5  # every block's two codes at 1/2: q = 1/2 everywhere
    X[0, queries.numeric_offset:] = x
    expected = reference.answers_relaxed(X, queries, np.inf)
    np.testing.assert_array_equal(cpu.answers_relaxed(X, queries, np.inf), expected)
