"""Query kernels: every backend against the NumPy reference, gradients against finite
differences, and the exact and relaxed definitions against each other.

Sizes are small on purpose (the suite, Numba compilation included, must stay fast); they
still span several row blocks and both the marginal-group and the CSR paths of ``cpu``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from polars_rap.kernels import BACKENDS, cpu, get_backend, reference
from polars_rap.workload.queries import QueryClass, QuerySet

FAST_BACKENDS = ["cpu"]
ALL_BACKENDS = ["reference", *FAST_BACKENDS]
SIGMAS = [1e-3, 3.0, 1e4, np.inf]


# ------------------------------------------------------------------------------ builders
def _halfspace(rng, n_numeric, width):
    index = rng.choice(n_numeric, size=width, replace=False)
    weight = rng.standard_normal(width) / math.sqrt(width)
    tau = float(weight @ rng.random(width))  # inside the range of theta . x on [0, 1]^d
    return index.tolist(), weight.tolist(), tau


def _prefix(rng, n_numeric):
    return [int(rng.integers(n_numeric))], [1.0], float(rng.random())


def random_queries(rng, column_sizes, n_numeric, *, shuffle_cell_coords=False) -> QuerySet:
    """Marginal groups (random column subsets in random order, cells row-major, with and
    without shared halfspaces), single linear thresholds, pure-halfspace, categorical-only
    and empty single queries."""
    column_sizes = list(column_sizes)
    starts = np.cumsum(column_sizes) - column_sizes
    label = len(column_sizes) - 1
    queries, group_sizes, group_columns, classes = [], [], [], []

    def add_marginal(columns, halfspaces, query_class):
        shape = [column_sizes[c] for c in columns]
        for cell in itertools.product(*(range(size) for size in shape)):  # last fastest
            coords = [int(starts[c] + code) for c, code in zip(columns, cell, strict=True)]
            if shuffle_cell_coords:
                coords = [coords[i] for i in rng.permutation(len(coords))]
            queries.append((coords, halfspaces))
        group_sizes.append(math.prod(shape))
        group_columns.append(list(columns))
        classes.extend([query_class] * math.prod(shape))

    def add_single(coords, halfspaces, query_class):
        queries.append((coords, halfspaces))
        group_sizes.append(1)
        group_columns.append([])
        classes.append(query_class)

    for _ in range(4):  # categorical marginals over 1..3 columns
        k = int(rng.integers(1, 4))
        columns = rng.choice(len(column_sizes), size=k, replace=False).tolist()
        add_marginal(columns, [], QueryClass.CATEGORICAL_MARGINAL)
    for _ in range(3):  # mixed marginals: label (and maybe a feature) x shared halfspaces
        columns = [label] if rng.random() < 0.5 else [int(rng.integers(label)), label]
        halfspaces = [_prefix(rng, n_numeric) for _ in range(int(rng.integers(1, 3)))]
        if rng.random() < 0.5:
            halfspaces.append(_halfspace(rng, n_numeric, min(2, n_numeric)))
        add_marginal(columns, halfspaces, QueryClass.MIXED_MARGINAL)
    for _ in range(6):  # linear thresholds: one label coordinate x one halfspace
        width = int(rng.integers(min(2, n_numeric), min(6, n_numeric) + 1))
        coord = int(starts[label] + rng.integers(column_sizes[label]))
        add_single([coord], [_halfspace(rng, n_numeric, width)], QueryClass.LINEAR_THRESHOLD)
    add_single([], [_halfspace(rng, n_numeric, n_numeric)], QueryClass.LINEAR_THRESHOLD)
    add_single([], [_prefix(rng, n_numeric), _halfspace(rng, n_numeric, 2)], QueryClass.LINEAR_THRESHOLD)
    columns = rng.choice(len(column_sizes), size=2, replace=False)
    coords = [int(starts[c] + rng.integers(column_sizes[c])) for c in columns]
    add_single(coords, [], QueryClass.CATEGORICAL_MARGINAL)
    add_single([], [], QueryClass.CATEGORICAL_MARGINAL)  # the empty product: answer 1
    return QuerySet.from_lists(queries, group_sizes, group_columns, column_sizes, n_numeric, classes)


def random_layout(rng):
    """Column sizes with a one-category column and a 2-category label last; 4 numerics."""
    sizes = rng.integers(2, 6, size=4).tolist()
    return [*sizes[:2], 1, *sizes[2:], 2], 4


def random_real(rng, column_sizes, n_numeric, n_rows):
    codes = np.stack([rng.integers(0, k, size=n_rows) for k in column_sizes], axis=1)
    return codes.astype(np.int32), rng.random((n_rows, n_numeric))


def random_relaxed(rng, column_sizes, n_numeric, n_rows, dtype=np.float32):
    blocks = [rng.dirichlet(np.ones(k), size=n_rows) for k in column_sizes]
    return np.hstack([*blocks, rng.random((n_rows, n_numeric))]).astype(dtype)


@pytest.fixture(params=[0, 1, 2], ids=lambda seed: f"seed{seed}")
def problem(request):
    rng = np.random.default_rng(request.param)
    column_sizes, n_numeric = random_layout(rng)
    queries = random_queries(rng, column_sizes, n_numeric, shuffle_cell_coords=request.param == 2)
    return rng, column_sizes, n_numeric, queries


def _assert_grad_close(actual, expected, rtol=1e-5):
    scale = max(float(np.max(np.abs(expected))), 1e-30)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


# -------------------------------------------------------------------------------- backends
def test_get_backend_returns_each_registered_module():
    """Every registered name resolves to a module with the three kernel functions."""
    for name in BACKENDS:
        module = get_backend(name)
        for function in ("answers_exact", "answers_relaxed", "loss_and_grad"):
            assert callable(getattr(module, function))
    assert get_backend("reference") is reference and get_backend("cpu") is cpu


def test_get_backend_unknown_name_lists_valid_names():
    """An unknown backend raises ValueError naming the valid choices."""
    with pytest.raises(ValueError, match="'reference', 'cpu'"):
        get_backend("gpu")


# --------------------------------------------------------------------------- exact answers
def test_reference_exact_answers_by_hand():
    """The reference computes hand-derived fractions: a one-column marginal, a marginal with a
    shared prefix, a linear threshold, a pure halfspace and the empty product."""
    codes = np.array([[0, 1], [1, 1], [1, 0], [0, 1]], dtype=np.int32)
    numerics = np.array([[0.1, 0.8], [0.5, 0.2], [0.7, 0.5], [0.4, 0.7]])
    prefix = ([0], [1.0], 0.45)  # x0 <= 0.45: rows 0 and 3
    line = ([0, 1], [1.0, 1.0], 1.0)  # x0 + x1 <= 1: rows 0 and 1
    queries = QuerySet.from_lists(
        [([0], []), ([1], []), ([2], [prefix]), ([3], [prefix]), ([3], [line]), ([], [line]), ([], [])],
        group_sizes=[2, 2, 1, 1, 1],
        group_columns=[[0], [1], [], [], []],
        column_sizes=[2, 2],
        n_numeric=2,
    )
    expected = [2 / 4, 2 / 4, 0 / 4, 2 / 4, 2 / 4, 2 / 4, 1.0]
    for name in ALL_BACKENDS:
        np.testing.assert_array_equal(get_backend(name).answers_exact(codes, numerics, queries), expected)


def test_cpu_exact_answers_equal_reference(problem):
    """cpu exact answers equal the reference to 1e-12 on rows spanning several blocks."""
    rng, column_sizes, n_numeric, queries = problem
    codes, numerics = random_real(rng, column_sizes, n_numeric, 2_500)
    expected = reference.answers_exact(codes, numerics, queries)
    actual = cpu.answers_exact(codes, numerics, queries)
    assert actual.dtype == np.float64 and actual.shape == (queries.n_queries,)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-12)


def test_cpu_exact_counts_of_paired_thresholds_equal_each_alone():
    """Neighbouring linear thresholds over the same columns share one sweep of them in the CSR
    loop; interleaved with thresholds over other columns, two-halfspace queries and an odd
    count, every query counts exactly the rows it counts alone, and as the reference does."""
    rng = np.random.default_rng(11)
    n_numeric, column_sizes = 5, [3, 2]
    shared = list(range(n_numeric))
    specs = []
    for k in range(23):
        weights = (rng.standard_normal(n_numeric) / math.sqrt(n_numeric)).tolist()
        tau = float(np.asarray(weights) @ rng.random(n_numeric))
        if k % 7 == 3:  # other columns, then two halfspaces: never paired with a neighbour
            specs.append(([3 + k % 2], [([1, 3], weights[:2], tau)]))
        elif k % 7 == 5:
            specs.append(([int(k % 3)], [(shared, weights, tau), ([2], [1.0], 0.5)]))
        else:
            specs.append(([3 + k % 2], [(shared, weights, tau)]))
    queries = QuerySet.from_lists(specs, [1] * len(specs), [[]] * len(specs), column_sizes, n_numeric)
    codes = np.stack([rng.integers(0, size, 3_000) for size in column_sizes], axis=1).astype(np.int32)
    numerics = np.round(rng.random((3_000, n_numeric)), 3)  # ties at thresholds are likelier
    together = cpu.answers_exact(codes, numerics, queries)
    alone = np.concatenate([cpu.answers_exact(codes, numerics, queries.take_groups([g]))
                            for g in range(len(specs))])
    np.testing.assert_array_equal(together, alone)
    np.testing.assert_array_equal(together, reference.answers_exact(codes, numerics, queries))


def test_cpu_exact_histogram_equals_csr_path(problem):
    """The per-group histogram and the per-query CSR loop count the same rows."""
    rng, column_sizes, n_numeric, queries = problem
    codes, numerics = random_real(rng, column_sizes, n_numeric, 1_500)
    np.testing.assert_array_equal(
        cpu._exact_counts(codes, numerics, queries, structured=True),
        cpu._exact_counts(codes, numerics, queries, structured=False),
    )


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_exact_answers_of_each_marginal_sum_to_its_halfspace_fraction(backend, problem):
    """The cells of a marginal group partition the rows passing its shared halfspaces."""
    rng, column_sizes, n_numeric, queries = problem
    codes, numerics = random_real(rng, column_sizes, n_numeric, 300)
    answers = get_backend(backend).answers_exact(codes, numerics, queries)
    for g in range(queries.n_groups):
        lo, hi = queries.group_offsets[g], queries.group_offsets[g + 1]
        if queries.group_column_offsets[g + 1] == queries.group_column_offsets[g]:
            continue
        first = queries.take_groups([g])
        halfspace_only = QuerySet.from_lists(
            [([], [
                (first.theta_index[first.theta_offsets[h]:first.theta_offsets[h + 1]].tolist(),
                 first.theta_weight[first.theta_offsets[h]:first.theta_offsets[h + 1]].tolist(),
                 float(first.tau[h]))
                for h in range(first.halfspace_offsets[0], first.halfspace_offsets[1])
            ])],
            [1], [[]], column_sizes, n_numeric,
        )
        total = get_backend(backend).answers_exact(codes, numerics, halfspace_only)[0]
        assert math.isclose(answers[lo:hi].sum(), total, abs_tol=1e-12)


# ------------------------------------------------------------------------- relaxed answers
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sigma", SIGMAS)
def test_cpu_relaxed_answers_match_reference(problem, sigma, dtype):
    """cpu relaxed answers are within 1e-5 of the reference, for tiny, moderate, huge and
    infinite sigma, on float32 and float64 X."""
    rng, column_sizes, n_numeric, queries = problem
    X = random_relaxed(rng, column_sizes, n_numeric, 300, dtype)
    expected = reference.answers_relaxed(X, queries, sigma)
    actual = cpu.answers_relaxed(X, queries, sigma)
    assert actual.dtype == np.float32 and actual.shape == (queries.n_queries,)
    assert np.all(np.isfinite(actual))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-5)


def test_cpu_relaxed_per_query_sigma_matches_reference(problem):
    """A different sigma per query, even inside one marginal group (which then leaves the
    structured path), gives the reference's answers."""
    rng, column_sizes, n_numeric, queries = problem
    X = random_relaxed(rng, column_sizes, n_numeric, 200)
    sigma = rng.choice(np.array([0.5, 4.0, 64.0, np.inf], dtype=np.float32), size=queries.n_queries)
    np.testing.assert_allclose(
        cpu.answers_relaxed(X, queries, sigma), reference.answers_relaxed(X, queries, sigma), atol=1e-5
    )
    targets = rng.random(queries.n_queries)
    loss_ref, grad_ref = reference.loss_and_grad(X, queries, targets, sigma)
    loss_cpu, grad_cpu = cpu.loss_and_grad(X, queries, targets, sigma)
    assert math.isclose(loss_cpu, loss_ref, rel_tol=1e-5)
    _assert_grad_close(grad_cpu, grad_ref)


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_hard_relaxed_answers_on_one_hot_data_equal_exact_answers(backend, problem):
    """With sigma = inf on one-hot X, the relaxed answers are the exact answers of the same
    rows: the two definitions agree (numerics chosen float32-representable)."""
    rng, column_sizes, n_numeric, queries = problem
    codes, numerics = random_real(rng, column_sizes, n_numeric, 400)
    numerics = numerics.astype(np.float32).astype(np.float64)
    starts = np.cumsum(column_sizes) - np.asarray(column_sizes)
    X = np.zeros((len(codes), queries.n_coords), dtype=np.float32)
    X[np.arange(len(codes))[:, None], starts + codes] = 1.0
    X[:, queries.numeric_offset:] = numerics
    kernels = get_backend(backend)
    exact = kernels.answers_exact(codes, numerics, queries)
    relaxed = kernels.answers_relaxed(X, queries, np.inf)
    np.testing.assert_array_equal(relaxed, exact.astype(np.float32))


def test_cpu_structured_and_csr_relaxed_paths_agree(problem):
    """The marginal-group walk and the per-query CSR loop give the same answers and gradient."""
    rng, column_sizes, n_numeric, queries = problem
    X = random_relaxed(rng, column_sizes, n_numeric, 150)
    sigma = np.full(queries.n_queries, 5.0, dtype=np.float32)
    targets = rng.random(queries.n_queries)
    walk = cpu._relaxed(X, queries, sigma, targets, structured=True)
    csr = cpu._relaxed(X, queries, sigma, targets, structured=False)
    np.testing.assert_allclose(walk[0], csr[0], rtol=1e-12, atol=1e-15)
    _assert_grad_close(walk[2], csr[2], rtol=1e-6)


def test_walk_order_puts_the_largest_column_innermost_and_keeps_each_cells_query():
    """Columns sorted by size (stable) with their row-major strides; a class-conditional
    marginal listed largest first (5, 3, 2 categories) walked in that order gives the answers
    and gradient of the CSR loop, cell by cell."""
    from polars_rap.kernels.cpu_halfspaces import _walk_order

    column_sizes, n_numeric = [5, 3, 2, 3], 1
    starts = np.cumsum(column_sizes) - column_sizes
    groups = [[0, 1, 2], [3, 1], [2]]
    lists, group_sizes = [], []
    for columns in groups:
        for cell in itertools.product(*(range(column_sizes[c]) for c in columns)):
            halfspaces = [(np.array([0]), np.array([1.0]), 0.4)] if len(columns) == 3 else []
            lists.append(([int(starts[c] + code) for c, code in zip(columns, cell, strict=True)], halfspaces))
        group_sizes.append(math.prod(column_sizes[c] for c in columns))
    queries = QuerySet.from_lists(lists, group_sizes, groups, column_sizes, n_numeric,
                                  [QueryClass.CATEGORICAL_MARGINAL] * len(lists))
    walk_columns, walk_strides = _walk_order(queries)
    assert walk_columns.tolist() == [2, 1, 0, 3, 1, 2]  # sizes 2, 3, 5 | 3, 3 (ties keep order) | 2
    assert walk_strides.tolist() == [1, 2, 6, 3, 1, 1]
    rng = np.random.default_rng(7)
    X = random_relaxed(rng, column_sizes, n_numeric, 40, np.float64)
    sigma = np.full(queries.n_queries, 4.0, dtype=np.float32)
    targets = rng.random(queries.n_queries)
    walk = cpu._relaxed(X, queries, sigma, targets, structured=True)
    csr = cpu._relaxed(X, queries, sigma, targets, structured=False)
    np.testing.assert_allclose(walk[0], csr[0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(walk[0], reference.answers_relaxed(X, queries, 4.0), rtol=1e-6)  # float32 out
    _assert_grad_close(walk[2], csr[2], rtol=1e-10)


# ---------------------------------------------------------------------------- loss + grad
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sigma", SIGMAS)
def test_cpu_loss_and_grad_match_reference(problem, sigma, dtype):
    """cpu loss and gradient are within 1e-5 (relative) of the reference; the gradient keeps
    X's dtype and shape."""
    rng, column_sizes, n_numeric, queries = problem
    X = random_relaxed(rng, column_sizes, n_numeric, 300, dtype)
    targets = reference.answers_relaxed(random_relaxed(rng, column_sizes, n_numeric, 50), queries, 2.0)
    loss_ref, grad_ref = reference.loss_and_grad(X, queries, targets.astype(np.float64), sigma)
    loss_cpu, grad_cpu = cpu.loss_and_grad(X, queries, targets.astype(np.float64), sigma)
    assert isinstance(loss_cpu, float)
    assert grad_cpu.dtype == dtype and grad_cpu.shape == X.shape
    assert np.all(np.isfinite(grad_cpu))
    assert math.isclose(loss_cpu, loss_ref, rel_tol=1e-5)
    _assert_grad_close(grad_cpu, grad_ref)


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_gradient_matches_central_finite_differences(backend, problem):
    """Every entry of dL/dX matches (L(X + h e) - L(X - h e)) / 2h on float64 X, sigma = 3."""
    rng, column_sizes, n_numeric, queries = problem
    kernels = get_backend(backend)
    X = random_relaxed(rng, column_sizes, n_numeric, 2, np.float64)
    targets = rng.random(queries.n_queries) * 0.5
    sigma = 3.0
    _, grad = kernels.loss_and_grad(X, queries, targets, sigma)
    np.testing.assert_allclose(grad, _central_differences(kernels, X, queries, targets, sigma),
                               rtol=1e-5, atol=1e-7)


def _central_differences(kernels, X, queries, targets, sigma, weights=None, step=1e-6):
    """dL/dX by central differences of ``kernels.loss_and_grad``'s loss, entry by entry."""
    numeric = np.empty_like(X)
    for index in np.ndindex(X.shape):
        plus, minus = X.copy(), X.copy()
        plus[index] += step
        minus[index] -= step
        numeric[index] = (kernels.loss_and_grad(plus, queries, targets, sigma, weights)[0]
                          - kernels.loss_and_grad(minus, queries, targets, sigma, weights)[0]) / (2 * step)
    return numeric


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_weighted_loss_is_the_weighted_sum_and_its_gradient_the_weighted_one(backend, problem):
    """With weights w: L = sum_q w_q r_q^2 exactly as that sum of the unweighted residuals,
    and dL/dX equals the finite differences of the weighted loss; all-ones weights give the
    unweighted loss and gradient bit for bit."""
    rng, column_sizes, n_numeric, queries = problem
    kernels = get_backend(backend)
    X = random_relaxed(rng, column_sizes, n_numeric, 2, np.float64)
    targets = rng.random(queries.n_queries) * 0.5
    weights = rng.random(queries.n_queries) * 3.0
    residual = kernels.answers_relaxed(X, queries, 3.0).astype(np.float64) - targets
    loss, grad = kernels.loss_and_grad(X, queries, targets, 3.0, weights)
    assert loss == pytest.approx(float(np.sum(weights * residual**2)), rel=1e-6)
    ones_loss, ones_grad = kernels.loss_and_grad(X, queries, targets, 3.0, np.ones(queries.n_queries))
    plain_loss, plain_grad = kernels.loss_and_grad(X, queries, targets, 3.0)
    assert ones_loss == plain_loss and np.array_equal(ones_grad, plain_grad)
    np.testing.assert_allclose(grad, _central_differences(kernels, X, queries, targets, 3.0, weights),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("case", ["negative", "nan", "shape"])
def test_bad_loss_weights_are_refused(case):
    rng = np.random.default_rng(0)
    column_sizes, n_numeric = random_layout(rng)
    queries = random_queries(rng, column_sizes, n_numeric)
    X = random_relaxed(rng, column_sizes, n_numeric, 4)
    weights = np.ones(queries.n_queries + (case == "shape"))
    weights[0] = {"negative": -0.5, "nan": np.nan, "shape": 1.0}[case]
    with pytest.raises(ValueError, match="weights must"):
        cpu.loss_and_grad(X, queries, np.zeros(queries.n_queries), 3.0, weights)


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_hard_thresholds_have_no_gradient_through_numerics(backend, problem):
    """With sigma = inf a halfspace factor is a step: the loss has zero derivative in the
    numeric coordinates (and no NaN from inf * 0)."""
    rng, column_sizes, n_numeric, queries = problem
    X = random_relaxed(rng, column_sizes, n_numeric, 40)
    _, grad = get_backend(backend).loss_and_grad(X, queries, rng.random(queries.n_queries), np.inf)
    assert np.all(np.isfinite(grad))
    assert np.all(grad[:, queries.numeric_offset:] == 0)


# ------------------------------------------------------------------------------ edge cases
def _edge_queries():
    """One-category column, a query with no halfspace, a pure halfspace, the empty product,
    a marginal over the one-category column with a shared halfspace."""
    column_sizes, n_numeric = [1, 3, 2], 2
    line = ([0, 1], [0.6, -0.8], 0.1)
    queries = [([0], []), ([1, 4], []), ([], [line]), ([], [])]
    queries += [([0, 1 + code], [([1], [1.0], 0.5)]) for code in range(3)]
    return QuerySet.from_lists(
        queries, [1, 1, 1, 1, 3], [[], [], [], [], [0, 1]], column_sizes, n_numeric
    ), column_sizes, n_numeric


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_edge_case_queries_match_reference(backend):
    """Edge-case queries give the reference's exact answers, relaxed answers and gradient;
    the one-category coordinate always holds on real data and the empty product is 1."""
    queries, column_sizes, n_numeric = _edge_queries()
    rng = np.random.default_rng(7)
    kernels = get_backend(backend)
    codes, numerics = random_real(rng, column_sizes, n_numeric, 200)
    exact = kernels.answers_exact(codes, numerics, queries)
    np.testing.assert_allclose(exact, reference.answers_exact(codes, numerics, queries), atol=1e-12)
    assert exact[0] == 1.0 and exact[3] == 1.0
    X = random_relaxed(rng, column_sizes, n_numeric, 200)
    for sigma in SIGMAS:
        np.testing.assert_allclose(
            kernels.answers_relaxed(X, queries, sigma), reference.answers_relaxed(X, queries, sigma), atol=1e-5
        )
        targets = rng.random(queries.n_queries)
        loss, grad = kernels.loss_and_grad(X, queries, targets, sigma)
        loss_ref, grad_ref = reference.loss_and_grad(X, queries, targets, sigma)
        assert math.isclose(loss, loss_ref, rel_tol=1e-5)
        _assert_grad_close(grad, grad_ref)


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_empty_query_set_gives_empty_answers_and_zero_loss(backend):
    """m = 0: empty float64 / float32 answers, loss 0 and an all-zero gradient like X."""
    queries = QuerySet.from_lists([], [], [], [3, 2], 2)
    kernels = get_backend(backend)
    rng = np.random.default_rng(3)
    codes, numerics = random_real(rng, [3, 2], 2, 10)
    X = random_relaxed(rng, [3, 2], 2, 10)
    exact = kernels.answers_exact(codes, numerics, queries)
    relaxed = kernels.answers_relaxed(X, queries, np.zeros(0, np.float32) + 1.0)
    loss, grad = kernels.loss_and_grad(X, queries, np.zeros(0), 1.0)
    assert exact.shape == (0,) and exact.dtype == np.float64
    assert relaxed.shape == (0,) and relaxed.dtype == np.float32
    assert loss == 0.0 and isinstance(loss, float)
    assert grad.shape == X.shape and grad.dtype == X.dtype and not grad.any()


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_invalid_inputs_raise_value_error(backend):
    """Zero rows, out-of-range codes, a wrong X width and a non-positive sigma are refused."""
    queries, column_sizes, n_numeric = _edge_queries()
    kernels = get_backend(backend)
    rng = np.random.default_rng(5)
    codes, numerics = random_real(rng, column_sizes, n_numeric, 20)
    X = random_relaxed(rng, column_sizes, n_numeric, 20)
    with pytest.raises(ValueError, match="at least one row"):
        kernels.answers_exact(codes[:0], numerics[:0], queries)
    with pytest.raises(ValueError, match="at least one row"):
        kernels.answers_relaxed(X[:0], queries, 1.0)
    bad_codes = codes.copy()
    bad_codes[3, 1] = 3
    with pytest.raises(ValueError, match="column 1 must lie in"):
        kernels.answers_exact(bad_codes, numerics, queries)
    with pytest.raises(ValueError, match="X must have shape"):
        kernels.answers_relaxed(X[:, 1:], queries, 1.0)
    with pytest.raises(ValueError, match="sigma must be > 0"):
        kernels.answers_relaxed(X, queries, 0.0)
    with pytest.raises(ValueError, match="targets must have shape"):
        kernels.loss_and_grad(X, queries, np.zeros(2), 1.0)


def test_cpu_refuses_a_marginal_group_whose_cells_are_out_of_order():
    """cpu checks the marginal-group structure it relies on instead of silently misreading a
    group whose cells are not in row-major order."""
    swapped = [([0, 3], []), ([1, 2], []), ([0, 2], []), ([1, 3], [])]
    queries = QuerySet.from_lists(swapped, [4], [[0, 1]], [2, 2], 1)
    rng = np.random.default_rng(1)
    codes, numerics = random_real(rng, [2, 2], 1, 10)
    with pytest.raises(ValueError, match="marginal group 0"):
        cpu.answers_exact(codes, numerics, queries)
    with pytest.raises(ValueError, match="marginal group 0"):
        cpu.answers_relaxed(random_relaxed(rng, [2, 2], 1, 10), queries, 1.0)


def test_cpu_is_deterministic(problem):
    """Same input, same output, to the bit (no order-dependent parallel reductions)."""
    rng, column_sizes, n_numeric, queries = problem
    X = random_relaxed(rng, column_sizes, n_numeric, 300)
    targets = rng.random(queries.n_queries)
    first = cpu.loss_and_grad(X, queries, targets, 4.0)
    second = cpu.loss_and_grad(X, queries, targets, 4.0)
    assert first[0] == second[0]
    np.testing.assert_array_equal(first[1], second[1])


def test_a_query_set_is_checked_once_and_a_derived_bad_one_still_refused(problem, monkeypatch):
    """The projection calls the kernels thousands of times on one query set: its checks run on
    the first call only (counted here), the answers are unchanged, and a malformed set derived
    from a checked one (a new object) is checked, and refused, afresh."""
    import dataclasses

    from polars_rap.kernels import _checks

    rng, column_sizes, n_numeric, queries = problem
    queries = dataclasses.replace(queries)  # a set no other test has checked
    X = random_relaxed(rng, column_sizes, n_numeric, 50)
    calls = []
    real = _checks._check_nullable_numerics
    monkeypatch.setattr(_checks, "_check_nullable_numerics", lambda q: calls.append(q) or real(q))
    first = cpu.answers_relaxed(X, queries, 2.0)
    for _ in range(3):
        np.testing.assert_array_equal(cpu.answers_relaxed(X, queries, 2.0), first)
    assert len(calls) == 1 and _checks.checked(queries, "queries")
    bad = dataclasses.replace(queries, cat_coords=queries.cat_coords + np.int32(10_000))
    if len(bad.cat_coords):
        with pytest.raises(ValueError, match="cat_coords must lie in"):
            cpu.answers_relaxed(X, bad, 2.0)
        assert not _checks.checked(bad, "queries")
