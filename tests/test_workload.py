"""Workload builders: structure of CM/MM/LT query sets, thresholds, sensitivities."""

import itertools
import math

import numpy as np
import polars as pl
import pytest

from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import encode
from polars_rap.kernels import reference
from polars_rap.workload.queries import QueryClass
from polars_rap.workload.builders import build_workload, categorical_marginals, describe_queries, group_sensitivities, linear_thresholds, mixed_marginals


@pytest.fixture
def domain():
    schema = {"a": pl.String, "b": pl.Int32, "c": pl.String, "x": pl.Float64, "z": pl.Float64,
              "w": pl.Float64, "y": pl.String}
    return Domain.from_mapping(schema, {
        "a": ["p", "q", "r"], "b": [1, 2], "c": ["u", "v", None], "x": (0, 10),
        "z": {"bounds": (-5, 5), "nullable": True}, "w": (0, 1), "y": ["no", "yes"],
    }, labels=["y"])


def random_frame(n, rng):
    return pl.DataFrame({
        "a": rng.choice(["p", "q", "r"], n), "b": rng.choice([1, 2], n).astype(np.int32),
        "c": pl.Series(rng.choice(["u", "v", "N"], n)).replace("N", None),
        "x": rng.random(n) * 10, "z": pl.Series(rng.random(n) * 10 - 5).set(pl.Series(rng.random(n) < 0.2), None),
        "w": rng.random(n), "y": rng.choice(["no", "yes"], n),
    })


def test_categorical_marginals_enumerate_every_pair_times_label(domain):
    queries = categorical_marginals(domain)
    features = [i for i, b in enumerate(domain.blocks) if not b.is_label]  # a, b, c, z-null
    label = domain.block_index("y")
    expected = [(p, q, label) for p, q in itertools.combinations(features, 2)]
    columns = [tuple(queries.group_columns[queries.group_column_offsets[g]:queries.group_column_offsets[g + 1]])
               for g in range(queries.n_groups)]
    assert columns == expected
    sizes = domain.block_sizes
    assert queries.group_sizes.tolist() == [math.prod(sizes[c] for c in combo) for combo in expected]
    assert np.all(queries.query_class == QueryClass.CATEGORICAL_MARGINAL)


def test_marginal_cells_are_row_major_and_partition_the_rows(domain):
    """On real rows each marginal group's answers sum to one, and the cell order is C order."""
    queries = categorical_marginals(domain)
    cells = [queries.cat_coords[queries.cat_offsets[q]:queries.cat_offsets[q + 1]].tolist() for q in range(4)]
    assert cells == [[0, 3, 8], [0, 3, 9], [0, 4, 8], [0, 4, 9]]  # a=p; b=1,2; y=no,yes (y after c's 3 codes)
    encoded = encode(random_frame(300, np.random.default_rng(0)), domain)
    answers = reference.answers_exact(encoded.codes, encoded.numerics, queries)
    sums = np.add.reduceat(answers, queries.group_offsets[:-1])
    np.testing.assert_allclose(sums, 1.0)


def test_max_cells_leaves_out_large_marginals(domain):
    assert categorical_marginals(domain, max_cells=12).group_sizes.max() <= 12
    assert categorical_marginals(domain, max_cells=12).n_groups < categorical_marginals(domain).n_groups


def test_linear_thresholds_cut_inside_the_range_of_theta_x(domain):
    queries = linear_thresholds(domain, 500, np.random.default_rng(3))
    assert queries.n_queries == queries.n_groups == 500
    theta = queries.theta_weight.reshape(500, 3).astype(np.float64)
    low = np.minimum(theta, 0).sum(axis=1)
    high = np.maximum(theta, 0).sum(axis=1)
    assert np.all((queries.tau >= low - 1e-6) & (queries.tau <= high + 1e-6))
    # each query conditions on one declared (non-null) label value
    label_coords = {domain.block_sizes[0] + domain.block_sizes[1] + domain.block_sizes[2] + k for k in range(2)}
    assert set(queries.cat_coords.tolist()) <= label_coords
    # and is neither always true nor always false on the data
    encoded = encode(random_frame(2000, np.random.default_rng(4)), domain)
    answers = reference.answers_exact(encoded.codes, encoded.numerics, queries)
    assert 0.2 < np.mean((answers > 0.01) & (answers < 0.49)) <= 1.0


def test_mixed_marginals_share_one_prefix_per_numeric_column(domain):
    queries = mixed_marginals(domain, 50, np.random.default_rng(5))
    assert queries.n_groups == 50
    assert np.all(queries.group_sizes == 2)  # both label values
    for g in range(queries.n_groups):
        first, second = queries.group_offsets[g], queries.group_offsets[g] + 1
        hs = [slice(queries.halfspace_offsets[q], queries.halfspace_offsets[q + 1]) for q in (first, second)]
        np.testing.assert_array_equal(queries.tau[hs[0]], queries.tau[hs[1]])
        columns = queries.theta_index[queries.theta_offsets[hs[0].start]:queries.theta_offsets[hs[0].stop]]
        assert len(set(columns.tolist())) == len(columns) == 2
    assert np.all((queries.tau >= 0) & (queries.tau <= 1))


def test_same_seed_same_workload(domain):
    one = build_workload(domain, np.random.default_rng(7), classes=("CM", "MM", "LT"))
    two = build_workload(domain, np.random.default_rng(7), classes=("CM", "MM", "LT"))
    for name in ("cat_coords", "theta_weight", "tau", "group_offsets"):
        np.testing.assert_array_equal(getattr(one, name), getattr(two, name))


def test_declared_sensitivities_bound_every_replace_one_change(domain):
    """Brute force: replacing any one row moves no group's answers by more than its declared
    L1 and L2 sensitivity."""
    rng = np.random.default_rng(11)
    queries = build_workload(domain, rng, classes=("CM", "MM", "LT"), n_mixed_marginals=20,
                             n_linear_thresholds=40)
    frame = random_frame(40, rng)
    base = encode(frame, domain)
    answers = reference.answers_exact(base.codes, base.numerics, queries)
    l1, l2 = group_sensitivities(queries, frame.height)
    others = encode(random_frame(30, np.random.default_rng(12)), domain)
    worst_l1 = np.zeros(queries.n_groups)
    worst_l2 = np.zeros(queries.n_groups)
    for i in range(0, 40, 7):
        for j in range(30):
            codes, numerics = base.codes.copy(), base.numerics.copy()
            codes[i], numerics[i] = others.codes[j], others.numerics[j]
            diff = reference.answers_exact(codes, numerics, queries) - answers
            worst_l1 = np.maximum(worst_l1, np.add.reduceat(np.abs(diff), queries.group_offsets[:-1]))
            worst_l2 = np.maximum(worst_l2, np.sqrt(np.add.reduceat(diff**2, queries.group_offsets[:-1])))
    assert np.all(worst_l1 <= l1 + 1e-12) and np.all(worst_l2 <= l2 + 1e-12)
    assert worst_l1.max() == pytest.approx(2 / 40)  # the bound is attained


def test_descriptions_name_columns_values_and_thresholds(domain):
    queries = build_workload(domain, np.random.default_rng(0), classes=("CM", "MM"), n_mixed_marginals=1)
    text = describe_queries(queries, domain, np.array([0, queries.n_queries - 1]))
    assert text[0] == "a=p & b=1 & y=no"
    assert text[1].startswith("y=yes & ") and "<=" in text[1]
