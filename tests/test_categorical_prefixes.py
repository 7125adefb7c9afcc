"""Categorical prefixes (polars_rap.fit.categorical_prefixes, ``PlannedStrategy(cm_prefixes=...)``):
the groups against a NumPy count cell by cell, their sensitivity over neighbouring tables, the
plan they join, and runs that select and measure them as charged marginals."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap import kernels
from polars_rap.fit.categorical_prefixes import add_categorical_prefixes, categorical_prefixes
from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import encode
from polars_rap.fit.projection import ProjectionConfig
from polars_rap.workload.queries import CLASS_CODES, QueryClass
from polars_rap.fit.strategy import PlannedStrategy, Step
from polars_rap.schema.transforms import from_unit
from polars_rap.workload.builders import group_sensitivities

from plans import OUTRIGHT_KEYWORDS  # tests/plans.py

MAPPING = {"a": ["x", "y"], "b": ["p", "q", "r"], "age": (17, 90),
           "commute": {"bounds": (1, 200), "nullable": True}, "y": ["0", "1"]}
FRACTIONS = (0.125, 0.25, 0.5, 0.75)


def _frame(n: int = 700, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 91, n)
    a = np.where(age < 35, rng.choice(["x", "y"], n, p=[0.9, 0.1]), rng.choice(["x", "y"], n, p=[0.2, 0.8]))
    commute = pl.Series("commute", rng.integers(1, 201, n)).set(pl.Series(rng.random(n) < 0.3), None)
    return pl.DataFrame({"a": a, "b": rng.choice(["p", "q", "r"], n), "age": age, "commute": commute,
                         "y": np.where(age > 45, "1", "0")})


def _domain(frame: pl.DataFrame) -> Domain:
    return Domain.from_mapping(frame.schema, MAPPING, ["y"])


# ------------------------------------------------------------------ the groups
def test_each_cell_counts_the_rows_of_its_categories_at_or_below_the_threshold() -> None:
    """Every CP query, by its stored coordinates and halfspace, against a count on the frame's
    own values: rows whose categories match and whose value (in units; a null as the lower
    bound, as every exact answer reads it) is at or below the threshold in units, over n.
    Group layout: numeric j x feature block (not j's own null indicator) x label x threshold;
    thresholds are half-integers in units (integer columns) and sorted."""
    frame = _frame()
    domain = _domain(frame)
    queries = categorical_prefixes(domain, FRACTIONS)
    encoded = encode(frame.select(domain.names), domain)
    answers = kernels.get_backend("cpu").answers_exact(encoded.codes, encoded.numerics, queries)
    assert set(queries.query_class.tolist()) == {QueryClass.CATEGORICAL_PREFIX}
    numeric = domain.numeric_columns
    n = frame.height
    seen_thresholds: dict[str, list[float]] = {}
    for g in range(queries.n_groups):
        lo, hi = queries.group_offsets[g], queries.group_offsets[g + 1]
        for q in range(lo, hi):
            mask = np.ones(n, dtype=bool)
            for c in queries.cat_coords[queries.cat_offsets[q]:queries.cat_offsets[q + 1]]:
                block = domain.blocks[queries.coord_column[c]]
                code = int(queries.coord_code[c])
                if block.indicator:
                    mask &= frame[block.source].is_null().to_numpy() == bool(code)
                else:
                    mask &= frame[block.source].to_numpy() == domain[block.source].categories[code]
            (h,) = range(queries.halfspace_offsets[q], queries.halfspace_offsets[q + 1])
            (j,) = queries.theta_index[queries.theta_offsets[h]:queries.theta_offsets[h + 1]]
            spec = numeric[j]
            threshold = float(from_unit(np.array([queries.tau[h]], dtype=np.float64), spec)[0])
            assert threshold % 1.0 == pytest.approx(0.5, abs=1e-4)  # between whole values
            values = frame[spec.name].fill_null(spec.lower).to_numpy()
            assert answers[q] == pytest.approx(np.count_nonzero(mask & (values <= threshold)) / n, abs=1e-12)
            if q == lo:
                seen_thresholds.setdefault(spec.name, []).append(round(threshold, 3))
    # per numeric column: 3 feature blocks for age (a, b, commute's null indicator), 2 for
    # commute (its own indicator left out), 4 thresholds each (none coincide), one label block
    assert queries.n_groups == (3 + 2) * len(FRACTIONS)
    assert sorted(set(seen_thresholds["age"])) == [26.5, 35.5, 53.5, 71.5]
    assert sorted(set(seen_thresholds["commute"])) == [25.5, 50.5, 100.5, 150.5]
    assert queries.group_sizes.tolist() == [4] * 4 + [6] * 4 + [4] * 4 + [4] * 4 + [6] * 4  # a, b, indicator; a, b


def test_a_group_moves_by_at_most_two_counts_under_replace_one() -> None:
    """Brute force over neighbours: replacing any one row of a small table by any other row
    of the domain's grid moves every CP group's answer vector by L1 <= 2/n and L2 <= sqrt(2)/n,
    both reached, which group_sensitivities states for these groups (they are marginals)."""
    frame = _frame(n=40, seed=1)
    domain = _domain(frame)
    queries = categorical_prefixes(domain, FRACTIONS)
    backend = kernels.get_backend("cpu")
    n = frame.height
    base = encode(frame.select(domain.names), domain)
    before = backend.answers_exact(base.codes, base.numerics, queries)
    replacements = _frame(n=60, seed=2)
    worst_l1 = worst_l2 = 0.0
    for row in range(0, n, 7):
        for new in range(replacements.height):
            neighbour = pl.concat([frame[:row], replacements[new:new + 1], frame[row + 1:]])
            encoded = encode(neighbour.select(domain.names), domain)
            diff = backend.answers_exact(encoded.codes, encoded.numerics, queries) - before
            for g in range(queries.n_groups):
                part = diff[queries.group_offsets[g]:queries.group_offsets[g + 1]]
                worst_l1, worst_l2 = max(worst_l1, np.abs(part).sum()), max(worst_l2, math.sqrt(np.sum(part**2)))
    l1, l2 = group_sensitivities(queries, n)
    assert worst_l1 == pytest.approx(2.0 / n, rel=1e-9) and np.all(l1 == 2.0 / n)
    assert worst_l2 == pytest.approx(math.sqrt(2.0) / n, rel=1e-9) and np.all(l2 == math.sqrt(2.0) / n)


# ------------------------------------------------------------------ the plan
def test_the_groups_join_the_annealed_cm_step_only() -> None:
    frame = _frame()
    domain = _domain(frame)
    plan = [Step("BM", 0.1, None), Step("CM", 0.6, 1, 10), Step("LT", 0.3, None)]
    counts = {"CM": 3, "LT": 20, "BM": 3}
    queries = categorical_prefixes(domain, (0.5,))
    joined_queries, joined_plan, joined_counts = add_categorical_prefixes(domain, queries, plan, counts, FRACTIONS)
    assert [s.joined for s in joined_plan] == [(), ("CP",), ()]
    assert [s.weight for s in joined_plan] == [s.weight for s in plan]  # no budget of their own
    assert joined_counts == {**counts, "CP": 20} and joined_queries.n_groups == queries.n_groups + 20
    outright = [Step("CM", 0.6, None), Step("LT", 0.3, None)]
    same = add_categorical_prefixes(domain, queries, outright, counts, FRACTIONS)
    assert same[0] is queries and same[1] == outright and same[2] == counts


def test_the_options_are_checked_described_and_ordered() -> None:
    strategy = PlannedStrategy(cm_prefixes=[0.25, 0.5], cm_anneal_last=True)
    assert strategy.cm_prefixes == (0.25, 0.5)
    assert strategy.describe()["cm_prefixes"] == [0.25, 0.5] and strategy.describe()["cm_anneal_last"] is True
    steps = strategy.plan({"CM": 10, "LT": 100}, {"CM": 4, "LT": 10}, 10)
    assert [s.query_class for s in steps] == ["LT", "CM"] and steps[-1].annealed
    assert [s.query_class for s in PlannedStrategy().plan({"CM": 10, "LT": 100}, {"CM": 4, "LT": 10}, 10)] == [
        "CM", "LT"]
    for bad in ((), (0.0,), (1.0,), (0.5, True), "0.5", 0.5, (math.nan,)):
        with pytest.raises(ValueError, match="cm_prefixes must be a non-empty tuple of fractions"):
            PlannedStrategy(cm_prefixes=bad)
    with pytest.raises(ValueError, match="cm_anneal_last must be True or False"):
        PlannedStrategy(cm_anneal_last=1)


# ------------------------------------------------------------------ runs
RUN = dict(delta=1e-7, domain=MAPPING, labels=["y"], seed=3, relaxed_rows=50, rounds_lt=2,
           n_linear_thresholds=30, backend="cpu", progress=False, projection=ProjectionConfig(max_steps=8))


def test_a_selected_prefix_is_measured_as_a_charged_marginal(last_candidate_picks) -> None:
    """Every annealed round forced to pick the last candidate (a CP group: they follow the CM
    tables), the selection still charged: each CP measurement is one ledger event named for its
    class and group, with noise std sqrt(2)/n / sqrt(2 rho) for its charge rho and the
    group's cells as answers; the measured groups are fitted (reported with synthetic answers)
    and the ledger closes to the budget."""
    picked = last_candidate_picks
    frame = _frame()
    result = polars_rap.synthesize(frame, epsilon=0.5, strategy={"name": "planned", "cm_prefixes": FRACTIONS,
                                                                 "cm_outright_l1": None, "cm_margin_reserve": 0.0},
                                   **RUN)
    report = result.report
    n = frame.height
    cp_events = [e for e in report.events if e.description.startswith("CP group")]
    assert picked and len(cp_events) == len(picked) == report.parameters["rounds"]["CM"]
    measured = report.measurements.filter(pl.col("query_class") == "CP")
    for event in cp_events:
        group = int(event.description.split()[-1])
        rows = measured.filter((pl.col("group") == group) & (pl.col("round") == event.round))
        assert rows.height == 3 * 2  # the last CP group: b x label x commute's last prefix
        sigma = (math.sqrt(2.0) / n) / math.sqrt(2.0 * event.rho)
        np.testing.assert_allclose(rows["noise_std"].to_numpy(), sigma, rtol=1e-12)
        assert rows["synthetic_answer"].is_not_null().all()
    assert report.rho_spent == math.fsum(e.rho for e in report.events) == report.rho_budget
    assert report.parameters["strategy"]["cm_prefixes"] == list(FRACTIONS)
    unmeasured = report.unmeasured.filter(pl.col("query_class").is_in(["CM", "CP"]))  # the selections' candidates
    assert set(unmeasured["query_class"]) == {"CM", "CP"}
    assert (unmeasured["description"].str.contains("<=") == (unmeasured["query_class"] == "CP")).all()


def test_an_outright_cm_step_measures_no_prefix_and_runs_as_without_them() -> None:
    """Where the CM share measures every table outright in one round (precise enough), no CP
    group is measured and the run is the one without cm_prefixes, bit for bit."""
    frame = _frame()
    settings = dict(epsilon=50.0, **RUN)
    plain = polars_rap.synthesize(frame, strategy={"name": "planned"}, **settings)
    joined = polars_rap.synthesize(frame, strategy={"name": "planned", "cm_prefixes": FRACTIONS}, **settings)
    assert not any(e.description == "CM selection" for e in plain.report.events)  # precise: one outright round
    assert [(e.description, e.rho.hex()) for e in joined.report.events] == [
        (e.description, e.rho.hex()) for e in plain.report.events]
    np.testing.assert_array_equal(joined.relaxed, plain.relaxed)
    assert joined.data.equals(plain.data)


def test_without_an_annealed_step_the_option_changes_nothing() -> None:
    frame = _frame()
    outright = {"name": "planned", **OUTRIGHT_KEYWORDS}
    plain = polars_rap.synthesize(frame, epsilon=1.0, strategy=outright, **RUN)
    joined = polars_rap.synthesize(frame, epsilon=1.0, strategy={**outright, "cm_prefixes": FRACTIONS}, **RUN)
    np.testing.assert_array_equal(joined.relaxed, plain.relaxed)
    assert CLASS_CODES["CP"] == QueryClass.CATEGORICAL_PREFIX


def test_a_prefix_step_of_its_own_takes_its_share_last_and_closes_the_ledger() -> None:
    """cm_prefixes_share: an annealed CP step after every other (its rounds numbered last),
    a Gumbel selection and one measurement per round, charged share x budget (to rounding:
    as the plan's last step it takes exactly what is left, so the ledger closes to the last
    float); the CM step is the default's, its candidates CM tables only."""
    frame = _frame()
    result = polars_rap.synthesize(frame, epsilon=1.0, strategy={
        "name": "planned", "cm_prefixes": FRACTIONS, "cm_prefixes_share": 0.1}, **RUN)
    report = result.report
    cp = [e for e in report.events if e.description.startswith("CP")]
    others = [e for e in report.events if not e.description.startswith("CP")]
    assert min(e.round for e in cp) > max(e.round for e in others)
    rounds = report.parameters["rounds"]["CP"]
    assert sum(e.description == "CP selection" for e in cp) == rounds == len(cp) // 2 >= 1
    assert math.fsum(e.rho for e in cp) == pytest.approx(0.1 * report.rho_budget, rel=1e-12)
    assert report.rho_spent == math.fsum(e.rho for e in report.events) == report.rho_budget
    cm_groups = report.measurements.filter(pl.col("query_class") == "CM")["description"].to_list()
    assert cm_groups and not any("<=" in text for text in cm_groups)
    with pytest.raises(ValueError, match="cm_prefixes_share must be a number in"):
        PlannedStrategy(cm_prefixes=FRACTIONS, cm_prefixes_share=1.0)
