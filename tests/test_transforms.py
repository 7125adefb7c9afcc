"""Declared scales and atoms: the exact maps to [0, 1], their inverse, the workload following
them, atoms kept exactly, and the declarations (Python, dict, TOML) with their errors."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import polars_rap
from polars_rap import kernels
from polars_rap.io.datasets import domain_from_tables
from polars_rap.schema.domain import Domain, Numeric
from polars_rap.schema.encoding import encode
from polars_rap.schema.transforms import LOG_RANGE, atom_width, equal_bin, from_unit, to_unit
from polars_rap.workload.builders import describe_queries, mixed_marginals


def _spec(scale: str = "linear", atoms=(), bounds=(0, 1000), dtype=pl.Float64):
    return Domain.from_mapping({"x": dtype}, {"x": Numeric(*bounds, scale=scale, atoms=atoms)})["x"]


# ------------------------------------------------------------------ the maps


def test_scales_map_hand_computed_points():
    log, sqrt, linear = _spec("log"), _spec("sqrt"), _spec()
    x = np.array([0.0, 1.0, 250.0, 1000.0])
    assert to_unit(x, linear).tolist() == [0.0, 0.001, 0.25, 1.0]
    assert to_unit(x, sqrt).tolist() == pytest.approx([0.0, math.sqrt(0.001), 0.5, 1.0])
    # log: log1p(K t) / log1p(K), t = x / 1000, K = 1000; one unit is the range's first thousandth
    assert LOG_RANGE == 1000.0
    assert to_unit(x, log).tolist() == pytest.approx([0.0, math.log(2) / math.log(1001), math.log(251) / math.log(1001), 1.0])
    assert to_unit(np.array([-5.0, 2000.0]), log).tolist() == [0.0, 1.0]  # clipped to the bounds first


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(["linear", "log", "sqrt"]), st.lists(st.floats(-50.0, 50.0), min_size=1, max_size=20))
def test_from_unit_inverts_to_unit(scale, values):
    spec = _spec(scale, bounds=(-50, 50))
    x = np.array(values)
    assert from_unit(to_unit(x, spec), spec) == pytest.approx(x, abs=1e-9)


def test_atoms_sit_in_their_slabs_and_every_point_of_a_slab_decodes_to_the_atom():
    spec = _spec("log", atoms=[0, 40, 1000])
    width = atom_width(3)
    assert width == 0.05
    squeeze = 1.0 - 3 * width
    at_lower, interior, at_upper = to_unit(np.array([0.0, 40.0, 1000.0]), spec)
    assert at_lower == 0.0 and at_upper == 1.0  # an atom at a bound sits on the bound: clipping holds it
    start_40 = squeeze * math.log1p(40) / math.log1p(1000) + width  # one slab below it
    assert interior == pytest.approx(start_40 + width / 2)  # an interior atom: the slab's centre
    for start, atom in ((0.0, 0.0), (start_40, 40.0), (1.0 - width, 1000.0)):
        slab = np.linspace(start, start + width, 11)
        assert (from_unit(slab, spec) == atom).all()  # exactly the atom, not a value near it
    # values beside an atom map outside its slab, and back
    near = np.array([1e-3, 39.9, 40.1, 999.0])
    assert from_unit(to_unit(near, spec), spec) == pytest.approx(near)
    assert not np.isin(from_unit(to_unit(near, spec), spec), [0.0, 40.0, 1000.0]).any()


def test_the_map_is_nondecreasing_so_thresholds_stay_prefixes():
    spec = _spec("sqrt", atoms=[0, 10, 500], bounds=(0, 1000))
    x = np.sort(np.concatenate([np.linspace(0, 1000, 2001), [0.0, 10.0, 500.0]]))
    u = to_unit(x, spec)
    assert (np.diff(u) >= 0).all() and u[0] >= 0 and u[-1] <= 1
    grid = np.linspace(0, 1, 1001)
    assert (np.diff(from_unit(grid, spec)) >= 0).all()


# ------------------------------------------------------------------ the workload follows the map


def test_mixed_marginal_thresholds_follow_a_log_scale_in_units():
    schema = {"gain": pl.Float64, "other": pl.Float64, "y": pl.String}
    rng_seed = 0
    texts = {}
    for scale in ("linear", "log"):
        domain = Domain.from_mapping(schema, {"gain": {"bounds": (0, 100_000), "scale": scale},
                                              "other": (0, 1), "y": ["a", "b"]}, labels=["y"])
        queries = mixed_marginals(domain, 2000, np.random.default_rng(rng_seed))
        texts[scale] = describe_queries(queries, domain, np.arange(queries.n_queries))
    def share_below(lines, limit):
        values = [float(part.split("<=")[1]) for line in lines for part in line.split(" & ") if part.startswith("gain<=")]
        return np.mean(np.array(values) <= limit)
    # uniform in the log coordinate: P[x <= 10,000] = log1p(100) / log1p(1000) = 0.668; linear: 0.1
    assert share_below(texts["log"], 10_000) == pytest.approx(math.log1p(100) / math.log1p(1000), abs=0.03)
    assert share_below(texts["linear"], 10_000) == pytest.approx(0.1, abs=0.03)


def test_exact_answers_in_the_mapped_coordinate_are_prefix_counts_in_units():
    rng = np.random.default_rng(1)
    values = np.where(rng.random(3000) < 0.6, 0.0, np.round(rng.lognormal(7, 1.5, 3000)))
    values = np.clip(values, 0, 100_000)
    frame = pl.DataFrame({"gain": values, "y": rng.choice(["a", "b"], 3000)})
    domain = Domain.from_mapping(frame.schema, {"gain": {"bounds": (0, 100_000), "scale": "log", "atoms": [0]},
                                                "y": ["a", "b"]}, labels=["y"])
    queries = mixed_marginals(domain, 200, np.random.default_rng(2))
    encoded = encode(frame, domain)
    answers = kernels.get_backend("cpu").answers_exact(encoded.codes, encoded.numerics, queries)
    spec = domain["gain"]
    for q in range(0, queries.n_queries, 7):
        tau = float(queries.tau[queries.halfspace_offsets[q]])
        label = domain["y"].categories[int(queries.coord_code[queries.cat_coords[q]])]
        threshold = from_unit(np.array([tau]), spec)[0]
        # u <= tau exactly when x <= F^-1(tau) (the atom 0 is the lower bound: it sits at u = 0)
        expected = np.mean((frame["y"] == label).to_numpy() & (values <= threshold))
        assert answers[q] == pytest.approx(expected, abs=1e-12)


# ------------------------------------------------------------------ synthesis keeps atoms


def test_declared_atoms_survive_synthesis_exactly():
    """An interior atom (40 hours) and one at a log-scaled column's lower bound (no gain) keep
    about their real share of rows, exactly; mixed marginals measure single-column prefixes.
    (Without the declarations, seeds 0-2 of these settings gave 0.47, 0.09 and 0.0 of rows at
    exactly 40 hours, against 0.51 in the data.)"""
    rng = np.random.default_rng(0)
    n_rows = 2000
    hours = np.where(rng.random(n_rows) < 0.5, 40, rng.integers(1, 99, n_rows))
    gain = np.where(rng.random(n_rows) < 0.85, 0, rng.integers(1000, 20000, n_rows))
    frame = pl.DataFrame({"hours": hours, "gain": gain, "y": rng.choice(["a", "b"], n_rows)})
    domain = {"hours": {"bounds": (1, 99), "atoms": [40]},
              "gain": {"bounds": (0, 99_999), "scale": "log", "atoms": [0]}, "y": ["a", "b"]}
    result = polars_rap.synthesize(frame, epsilon=10.0, delta=1e-8, domain=domain, labels=["y"],
                                   seed=0, progress=False,
                                   strategy=polars_rap.PlannedStrategy(
                                       relaxed_rows=64, rounds={"LT": 2, "MM": 6},
                                       workload=polars_rap.WorkloadSize(n_linear_thresholds=100, n_mixed_marginals=100)))
    data = result.data
    assert data.schema == frame.schema
    assert (data["hours"] == 40).mean() == pytest.approx((hours == 40).mean(), abs=0.1)
    assert (data["gain"] == 0).mean() == pytest.approx((gain == 0).mean(), abs=0.1)
    assert data["hours"].n_unique() > 10 and (data["gain"] > 1000).any()  # the continuous parts remain
    assert result.domain["gain"].atoms == (0.0,) and result.domain["gain"].scale == "log"


# ------------------------------------------------------------------ declarations


@pytest.mark.parametrize(("entry", "error", "message"), [
    ({"bounds": (0, 10), "scale": "exp"}, ValueError, r"'scale' parameter must be one of \['linear', 'log', 'sqrt'\]"),
    ({"bounds": (0, 10), "atoms": [11]}, ValueError, r"column 'x': atoms \[11.0\] lie outside its bounds"),
    ({"bounds": (0, 10), "atoms": [1, 1]}, ValueError, r"column 'x' declares repeated atoms"),
    ({"bounds": (0, 10), "atoms": [k / 4 for k in range(22)]}, ValueError, r"declares 22 atoms, more than 20"),
    ({"bounds": (0, 10), "integer": True, "atoms": [0.5]}, ValueError, r"integer but its atoms \[0.5\] are not all whole"),
    ({"bounds": (0, 10), "atoms": "0"}, TypeError, r"'atoms' parameter must be a list"),
    ({"bounds": (0, 10), "atoms": ["zero"]}, TypeError, r"column 'x': The 'atoms' parameter must hold numbers"),
    ({"categories": [1, 2], "scale": "log"}, ValueError, r"column 'x': 'scale' applies to numeric bounds"),
])
def test_bad_scale_and_atom_declarations_name_the_column(entry, error, message):
    with pytest.raises(error, match=message):
        Domain.from_mapping({"x": pl.Float64}, {"x": entry})


def test_scale_and_atoms_round_trip_through_the_arrow_schema():
    domain = Domain.from_mapping({"x": pl.Int64}, {"x": {"bounds": (0, 100), "scale": "sqrt", "atoms": [50, 0]}})
    assert domain["x"].atoms == (0.0, 50.0)  # sorted
    again = Domain.from_arrow_schema(domain.to_arrow_schema())
    assert again == domain and again["x"].scale == "sqrt"


def test_toml_tables_declare_scale_and_atoms():
    tables = {"gain": {"kind": "numeric", "bounds": [0, 99999], "scale": "log", "atoms": [0]},
              "hours": {"kind": "numeric", "bounds": [1, 99], "scale": "sqrt"}}
    assert domain_from_tables(tables, [], "c.toml") == {
        "gain": {"bounds": (0, 99999), "scale": "log", "atoms": [0]},
        "hours": {"bounds": (1, 99), "scale": "sqrt"}}
    with pytest.raises(ValueError, match=r"scale = 'cube'; it must be one of"):
        domain_from_tables({"g": {"kind": "numeric", "bounds": [0, 1], "scale": "cube"}}, [], "c.toml")
    with pytest.raises(ValueError, match=r"needs atoms = \[values, ...\]"):
        domain_from_tables({"g": {"kind": "numeric", "bounds": [0, 1], "atoms": 0}}, [], "c.toml")
    with pytest.raises(ValueError, match=r"'atoms' applies to numeric columns"):
        domain_from_tables({"g": {"kind": "categorical", "categories": [1], "atoms": [1]}}, [], "c.toml")


def test_the_workload_depends_on_the_declarations_only_never_the_data():
    """Scale and atoms are public: the same domain gives the same workload on any rows."""
    schema = {"gain": pl.Float64, "y": pl.String}
    declared = {"gain": {"bounds": (0, 100), "scale": "log", "atoms": [0]}, "y": ["a", "b"]}
    domain = Domain.from_mapping(schema, declared, labels=["y"])
    first = mixed_marginals(domain, 30, np.random.default_rng(5))
    second = mixed_marginals(Domain.from_mapping(schema, declared, labels=["y"]), 30, np.random.default_rng(5))
    assert np.array_equal(first.tau, second.tau)


def test_equal_bins_are_closed_below_and_the_last_is_closed_above() -> None:
    """Four bins of [0, 1]: a bin edge belongs to the bin above it, 1 to the last bin, and values
    outside [0, 1] are clipped first."""
    u = np.array([-0.5, 0.0, 0.2499, 0.25, 0.5, 0.9999, 1.0, 3.0])
    assert equal_bin(u, 4).tolist() == [0, 0, 0, 1, 2, 3, 3, 3]
    assert equal_bin(u, 4).dtype == np.int64
