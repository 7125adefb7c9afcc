"""Annealed CM rounds (polars_rap.fit.annealing, the planned strategy's CM step): the plan,
the budget rule to the last float, the annealing test, the noise-aware scores, re-measured
tables, the report, and default plans left exactly as they were."""

from __future__ import annotations

import hashlib
import logging
import math

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap import kernels
from polars_rap.fit import annealing
from polars_rap.fit import planning
from polars_rap.fit import rounds
from polars_rap.schema.domain import Domain
from polars_rap.errors import DataError
from polars_rap.privacy.ledger import PrivacyLedger, closing_charge
from polars_rap.fit.projection import ProjectionConfig, ProjectionTrace
from polars_rap.pipeline.release import bonferroni_answers
from polars_rap.privacy.report import SelectionRecord, unmeasured_error_bounds
from polars_rap.fit.loop_record import LoopRecord
from polars_rap.workload.queries import CLASS_CODES
from polars_rap.privacy.selection_scores import expected_noise_l1, selection_scores
from polars_rap.io.source import DataSource, exact_answers
from polars_rap.fit.strategy import PlannedStrategy, Step
from polars_rap.workload.builders import group_sensitivities

from plans import ANNEALED_ONLY, OUTRIGHT  # tests/plans.py

TINY_DOMAIN = {"a": ["x", "y"], "b": ["p", "q", "r"], "c": ["u", "v", "w", "z"], "d": ["m", "f"],
               "t": (0.0, 10.0), "y": ["0", "1"]}
TINY = dict(epsilon=1.0, delta=1e-7, domain=TINY_DOMAIN, labels=["y"], seed=5, backend="cpu", progress=False)
TINY_LOOP = dict(relaxed_rows=40, rounds={"LT": 2}, queries_per_round=3, workload={"n_linear_thresholds": 30},
                 projection=ProjectionConfig(max_steps=5))  # the strategy's loop settings
# sha256 of _fingerprint on the code before CM annealing existed (merge-work a3fe068): the CM
# class measured outright (the default), and CM by two selection rounds of K = 2.
BEFORE_ANNEALING = {
    "outright": "e56dce3133f7f75f11ca555e6ec84436cf893da2105eadde999abc18cf891c61",
    "selection": "367aba521609186b40c842c1a56370fe0247392d64fe7c0c72a5b4cafa418ec0",
}


def _tiny_frame(seed: int = 0, n: int = 1500) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({"a": rng.choice(["x", "y"], n), "b": rng.choice(["p", "q", "r"], n),
                         "c": rng.choice(["u", "v", "w", "z"], n), "d": rng.choice(["m", "f"], n),
                         "t": rng.uniform(0.0, 10.0, n), "y": rng.choice(["0", "1"], n)})


def _fingerprint(result) -> str:
    """Everything a run releases or returns, hashed: relaxed data, ledger events, measurements
    and the synthetic rows."""
    digest = hashlib.sha256(np.ascontiguousarray(result.relaxed).tobytes())
    for e in result.report.events:
        digest.update(f"{e.mechanism}|{e.rho.hex()}|{e.description}|{e.round}".encode())
    m = result.report.measurements
    for column in ("round", "group", "noisy_answer", "noise_std", "synthetic_answer"):
        digest.update(m[column].to_numpy().tobytes())
    for column in result.data.columns:
        digest.update(repr(result.data[column].to_list()).encode())
    return digest.hexdigest()


# ------------------------------------------------------------------ default plans unchanged
EQUAL_SHARES = OUTRIGHT.but(class_shares=None)  # the default when hashed: equal shares, whole schedule (in TINY_WHOLE)
TINY_WHOLE = {**TINY_LOOP, "projection": ProjectionConfig(max_steps=5, warm_doublings=6)}  # 6 = max_doublings: every stage


@pytest.mark.parametrize(("kind", "settings"), [("outright", {}),
                                                ("selection", {"rounds": {"CM": 2, "LT": 2}, "queries_per_round": 2})])
def test_runs_with_the_option_off_are_those_of_before_bit_for_bit(kind, settings) -> None:
    """With CM not annealed (and no base marginals), a fixed-seed run releases and returns
    exactly what the code before the option did: same relaxed data, events, measurements and
    rows (hashes taken on merge-work a3fe068, whose default gave the classes equal shares)."""
    result = polars_rap.synthesize(_tiny_frame(), strategy=EQUAL_SHARES.but(**{**TINY_WHOLE, **settings}), **TINY)
    assert _fingerprint(result) == BEFORE_ANNEALING[kind]


# ------------------------------------------------------------------ the plan
def test_the_annealed_plan_puts_one_cm_step_first_with_the_class_share() -> None:
    """The annealed CM step (K = 1, T0 = the CM groups) in place of the outright step, with the
    same share; LT's rounds as before. A step's K and T0 are its own."""
    plan = ANNEALED_ONLY.plan({"CM": 153, "LT": 2_000}, {"CM": 18, "LT": 5}, 10)
    assert plan[0] == Step("CM", 2.0 / 3.0, 1, 153) and plan[0].kind == "annealed" and not plan[0].outright
    assert [(s.query_class, s.kind, s.k) for s in plan[1:]] == [("LT", "selection", 10)] * 5
    assert plan[1:] == OUTRIGHT.plan({"CM": 153, "LT": 2_000}, {"CM": 18, "LT": 5}, 10)[1:]
    set_k = ANNEALED_ONLY.but(cm_step={"k": 3, "annealed_rounds": 40}).plan(
        {"CM": 153, "LT": 2_000}, {"CM": 1, "LT": 5}, 10)
    assert set_k[0] == Step("CM", 2.0 / 3.0, 3, 40)
    assert ANNEALED_ONLY.plan({"CM": 153, "LT": 100}, {"CM": 0, "LT": 1}, 10) == [
        Step("LT", 1.0, 10)]  # no CM rounds asked: no CM step
    assert Step("CM", 1.0, None).kind == "outright" and Step("LT", 1.0, 5).kind == "selection"


def test_the_default_plan_anneals_cm_with_aim_s_selection_share_and_the_outright_cap() -> None:
    """The planned strategy's annealed CM step: K = 1, T0 = the CM groups, its selection paying
    CM_ANNEAL_SELECTION_SHARE of each round, measured outright in one round under CM_OUTRIGHT_L1."""
    from polars_rap.fit.planned_strategy import CM_ANNEAL_SELECTION_SHARE, CM_OUTRIGHT_L1

    step = PlannedStrategy(base_share=0.0).plan({"CM": 153, "LT": 2_000}, {"CM": 18, "LT": 5}, 10)[0]
    assert step == Step("CM", 2.0 / 3.0, 1, 153, selection_share=CM_ANNEAL_SELECTION_SHARE,
                        outright_l1=CM_OUTRIGHT_L1)
    assert (CM_ANNEAL_SELECTION_SHARE, CM_OUTRIGHT_L1) == (0.1, 0.15)


def test_null_rates_do_not_count_an_annealed_class_as_covered() -> None:
    """An annealed step of K = 1 may leave groups unmeasured, so a nullable column its groups
    cover still gets its null-rate step; K at least the class's groups measures all each round."""
    from polars_rap.fit.null_rates import fully_measured_classes

    assert fully_measured_classes([Step("CM", 1.0, 1, 10)], {"CM": 6}) == set()
    assert fully_measured_classes([Step("CM", 1.0, 6, 10)], {"CM": 6}) == {"CM"}


def test_bonferroni_counts_every_annealed_round_beyond_the_class_cap() -> None:
    """An annealed step may re-measure, so its T0 rounds of the K largest groups are added
    beyond the class's answers; other steps are capped as before."""
    domain = Domain.from_mapping(_tiny_frame().schema, TINY_DOMAIN, ["y"])
    queries, plan, _ = planning.workload_and_plan(
        domain, ANNEALED_ONLY.but(cm_step={"k": 2, "annealed_rounds": 7}),
        np.random.default_rng(0), rounds_cm=None, rounds_lt=0, rounds_mm=0, queries_per_round=3,
        n_mixed_marginals=0, n_linear_thresholds=0, max_marginal_cells=None)
    sizes = np.sort(queries.group_sizes[queries.group_class == CLASS_CODES["CM"]])[::-1]
    assert plan == [Step("CM", 1.0, 2, 7)]
    assert bonferroni_answers(plan, queries) == 7 * int(sizes[:2].sum()) > int(sizes.sum())


def test_the_noise_check_sees_an_annealed_step_s_first_round() -> None:
    """An annealed step's thinnest measurement is its first round's, ``rho_step (1 -
    selection_share) / T0`` split over K: the row check refuses a count that an equal
    selection step without annealing accepts."""
    rho, selection_share, t0 = 0.02, 0.5, 10
    rho_group = rho * (1 - selection_share) / t0
    needed = math.ceil(1.0 / (planning.MAX_NOISE_STD * math.sqrt(rho_group)))
    annealed, plain = [Step("CM", 1.0, 1, t0)], [Step("CM", 1.0, 1)]
    share = {("CM", False): 1.0}
    planning.check_rows_against_noise(needed, rho, annealed, share, 1, selection_share, 1.0)
    planning.check_rows_against_noise(needed - 1, rho, plain, share, 1, selection_share, 1.0)
    with pytest.raises(DataError, match=f"needs at least {needed} rows"):
        planning.check_rows_against_noise(needed - 1, rho, annealed, share, 1, selection_share, 1.0)


def test_loop_rho_needed_is_where_the_noise_check_starts_refusing() -> None:
    """At ``loop_rho_needed`` the thinnest measurement's std is MAX_NOISE_STD to rounding: a
    rho 1% above it passes the row check, 1% below is refused."""
    selection_share, t0, n = 0.5, 10, 5_000
    plan = [Step("CM", 2.0, 1, t0), Step("LT", 1.0, 3)]
    share = {("CM", False): 0.5, ("LT", False): 0.25}
    needed = planning.loop_rho_needed(n, plan, share, selection_share)
    thinnest = min(2 / 3 * (1 - selection_share) / t0 * 0.5, 1 / 3 * (1 - selection_share) * 0.25)
    assert math.isclose(needed, 1.0 / (n**2 * planning.MAX_NOISE_STD**2 * thinnest), rel_tol=1e-12)
    planning.check_rows_against_noise(n, needed * 1.01, plan, share, 3, selection_share, 1.0)
    with pytest.raises(DataError, match="rows are too few"):
        planning.check_rows_against_noise(n, needed * 0.99, plan, share, 3, selection_share, 1.0)


# ------------------------------------------------------------------ the rounds, on a stub
class _Version:
    """Stand-in relaxed parameters: the projection's count so far (the stub backend's answers
    are a function of it)."""

    def __init__(self, version: int) -> None:
        self.version = version

    def relaxed(self) -> int:
        return self.version


class _StubBackend:
    """Answers every query with ``levels[version]``: dyadic levels, so the movement between
    two projections is exact in floats."""

    def __init__(self, levels) -> None:
        self.levels = levels

    def answers_relaxed(self, version, queries, sigma) -> np.ndarray:
        return np.full(queries.n_queries, self.levels[version], dtype=np.float32)


@pytest.fixture(scope="module")
def categorical_setup():
    """A categorical-only workload (3 features x label: 6 CM groups) and its exact answers."""
    frame = _tiny_frame(1, 800).drop("t")
    domain_spec = {k: v for k, v in TINY_DOMAIN.items() if k != "t"}
    domain = Domain.from_mapping(frame.schema, domain_spec, ["y"])
    queries, plan, _ = planning.workload_and_plan(
        domain, PlannedStrategy(), np.random.default_rng(0), rounds_cm=None, rounds_lt=0,
        rounds_mm=0, queries_per_round=10, n_mixed_marginals=0, n_linear_thresholds=0, max_marginal_cells=None)
    true_answers, n_rows = exact_answers(DataSource.from_input(frame), domain, queries,
                                         kernels.resolve_backend("cpu"))
    return queries, true_answers, n_rows


def _run_stub(monkeypatch, setup, fires, *, total_units, step_rho=0.3, budget=1.0, selection_share=0.2,
              k=1, closes_ledger=False):
    """Run the annealed step on the stub: round t's projection moves every answer by 0.25
    (``fires[t]``: exactly the stubbed threshold, 0.25 per cell) or 0.25 + 2**-10 (above it)."""
    queries, true_answers, n_rows = setup
    levels = [0.5]
    for t, fire in enumerate(fires):
        step = 0.25 if fire else 0.25 + 2.0**-10
        levels.append(levels[-1] + (step if t % 2 == 0 else -step))
    projected, thresholds, selections = [], [], []

    def fake_project(params, measured, targets, backend, config, anneal=True, weights=None, warm=False):
        projected.append((measured.n_queries, len(targets), weights))
        return _Version(params.version + 1), ProjectionTrace(0, 1, 0.0)

    def fake_threshold(stds, sizes):
        thresholds.append((list(stds), [int(s) for s in sizes]))
        return 0.25 * float(np.sum(sizes))

    real_top_k = annealing.gumbel_top_k

    def spy_top_k(scores, k, l1, rho, ledger, rng, **kwargs):
        selections.append((np.array(scores), k, l1, rho))
        return real_top_k(scores, k, l1, rho, ledger, rng, **kwargs)

    monkeypatch.setattr(rounds, "project", fake_project)
    monkeypatch.setattr(annealing, "annealing_threshold", fake_threshold)
    monkeypatch.setattr(annealing, "gumbel_top_k", spy_top_k)
    l1, l2 = group_sensitivities(queries, n_rows)
    ledger = PrivacyLedger(budget)
    record = LoopRecord(_Version(0))
    rounds_run = annealing.run_annealed_step(
        Step("CM", 1.0, k, total_units), queries, true_answers, l1, l2, ledger, record,
        _StubBackend(levels), ProjectionConfig(), np.random.default_rng(7), step_rho=step_rho,
        closes_ledger=closes_ledger, first_round=3, n_rows=n_rows, selection_share=selection_share,
        inverse_variance=True,
    )
    return dict(rounds=rounds_run, ledger=ledger, record=record, projected=projected,
                thresholds=thresholds, selections=selections, levels=levels, n_rows=n_rows)


@pytest.mark.parametrize(("total_units", "fires", "multipliers"), [
    # units left 12, 11 (fires: x4), 10 > 2*4, then 6 <= 8: the fourth round is the last
    (12, [False, True, False, False], [1, 1, 4, None]),
    # 40, 39 (x4 again), 35 > 2*16, then 19 <= 2*64: last
    (40, [True, True, True, True], [1, 4, 16, None]),
    # T0 = 2: the first round is already the last (2 <= 2*1) and takes the whole step
    (2, [False], [None]),
    # never fires: rounds of 1 unit until 2 units are left, taken by the last (T0 - 1 rounds)
    (5, [False] * 4, [1, 1, 1, None]),
])
def test_round_budgets_quadruple_on_the_annealing_test_and_the_last_takes_the_rest(
        monkeypatch, categorical_setup, total_units, fires, multipliers) -> None:
    """Round t's selection is charged ``share * step_rho * m_t / T0`` exactly, ``m_t``
    multiplied by 4 exactly after a round that moved by at most the threshold (equal counts)
    and kept after one 2**-10 above it; a round is the last when the units left are at most
    2 m_t, and it charges what is left: the step's charges add up to step_rho to the last float
    (the ledger's budget is larger, so only the step's part is closed)."""
    step_rho, share = 0.3, 0.2
    out = _run_stub(monkeypatch, categorical_setup, fires, total_units=total_units, step_rho=step_rho,
                    selection_share=share)
    events = out["ledger"].events
    assert out["rounds"] == len(multipliers) == out["record"].class_rounds["CM"]
    assert [e.round for e in events if e.mechanism == "gumbel_top_k"] == list(range(3, 3 + len(multipliers)))
    selection = [e.rho for e in events if e.mechanism == "gumbel_top_k"]
    for t, multiplier in enumerate(multipliers):
        earlier = [e.rho for e in events if e.round < 3 + t]
        round_rho = step_rho * multiplier / total_units if multiplier else closing_charge(earlier, step_rho)
        assert selection[t] == share * round_rho
        group = [e.rho for e in events if e.round == 3 + t and e.mechanism == "gaussian"]
        assert len(group) == 1 and (multiplier is None or group[0] == (1 - share) * round_rho)
    for t in range(1, len(multipliers) - 1):
        assert selection[t] == selection[t - 1] * (4 if fires[t - 1] else 1)
    assert math.fsum(e.rho for e in events) == step_rho
    assert out["ledger"].rho_spent == step_rho < out["ledger"].rho_budget


def test_the_annealing_test_reads_the_round_s_noise_and_the_measured_tables(monkeypatch, categorical_setup) -> None:
    """The threshold is asked for the round's measured groups, with the stds the Gaussian
    mechanism returned and their cells; the projection sees every measurement so far with
    inverse-variance weights; the true thresholds are sqrt(2/pi) std cells."""
    out = _run_stub(monkeypatch, categorical_setup, [False, True, False, False], total_units=12)
    record, (queries, _, _) = out["record"], categorical_setup
    assert [stds for stds, _ in out["thresholds"]] == [[s] for s in record.noise_stds]
    assert [sizes for _, sizes in out["thresholds"]] == [[int(queries.group_sizes[g])] for g in record.groups]
    measured = np.cumsum(queries.group_sizes[record.groups])
    assert [n for n, _, _ in out["projected"]] == [m for m in measured] == [t for _, t, _ in out["projected"]]
    precision = 1.0 / np.repeat(np.square(record.noise_stds), queries.group_sizes[record.groups])
    np.testing.assert_allclose(out["projected"][-1][2], precision / precision.mean(), rtol=1e-12)
    monkeypatch.undo()  # the real threshold
    stds, sizes = np.array([0.01, 0.02]), np.array([4, 6])
    assert annealing.annealing_threshold(stds, sizes) == math.sqrt(2 / math.pi) * float(np.sum(stds * sizes))


def test_the_scores_are_the_errors_minus_the_rounded_expected_noise(monkeypatch, categorical_setup) -> None:
    """Every round's Gumbel scores are the exact L1 errors (count units) of the synthetic data
    minus each table's expected noise norm at the round's per-table rho, rounded to whole
    counts; sensitivity 2 counts (a marginal), K = 1. The shifts shrink as the rounds' rho
    quadruples."""
    out = _run_stub(monkeypatch, categorical_setup, [True, True, True, True], total_units=40)
    queries, true_answers, n_rows = categorical_setup
    candidates = np.flatnonzero(queries.group_class == CLASS_CODES["CM"])
    sizes = queries.group_sizes[candidates]
    true_counts = np.rint(true_answers[queries.group_query_indices(candidates)] * n_rows)
    l2 = group_sensitivities(queries, n_rows)[1][candidates]
    events, shifts = out["ledger"].events, []
    for t, (scores, k, l1, _) in enumerate(out["selections"]):
        earlier = [e.rho for e in events if e.round < 3 + t]
        round_rho = 0.3 * [1, 4, 16][t] / 40 if t < 3 else closing_charge(earlier, 0.3)
        measure_rho = (1.0 - 0.2) * round_rho
        shift = np.rint(np.minimum(expected_noise_l1(l2, sizes, measure_rho / k) * n_rows, n_rows * sizes))
        assert (k, l1) == (1, 2.0) and np.all(shift > 0) and np.all(shift == np.floor(shift))
        synthetic = np.full(int(sizes.sum()), out["levels"][t], dtype=np.float32)
        np.testing.assert_array_equal(scores, selection_scores(true_counts, synthetic, sizes, n_rows) - shift)
        shifts.append(shift)
    assert len(shifts) == 4 and all(np.all(later < earlier) for earlier, later in zip(shifts, shifts[1:]))


def test_the_last_step_of_a_plan_closes_the_whole_ledger(monkeypatch, categorical_setup) -> None:
    """closes_ledger: the last charge is the ledger's remainder, so the budget is spent to the
    last float even when step_rho (computed from weights) is off by an ulp."""
    budget = 0.7
    out = _run_stub(monkeypatch, categorical_setup, [False, False], total_units=3, step_rho=budget * 3 / 3,
                    budget=budget, closes_ledger=True)
    assert out["ledger"].rho_spent == budget == math.fsum(e.rho for e in out["ledger"].events)


# ------------------------------------------------------------------ bounds with a score shift
def test_unmeasured_bounds_carry_the_noise_aware_shift() -> None:
    """A shifted score r beat by j gives ``s_r <= h_r + (s_j - h_j) + Gumbel terms``: against
    the same record without shifts, each bound moves by exactly h_r - h_j."""
    base = dict(round=0, query_class="CM", candidates=np.array([0, 1, 2]),
                candidate_answers=np.full(6, 0.25), gumbel_scale=0.01, selected=np.array([1]),
                selected_gap=np.array([0.02]), selected_std=np.array([0.001]), selected_size=np.array([2]),
                lattice_step=0.0)
    sizes, final = np.array([2, 2, 2]), np.full(6, 0.25)
    plain = unmeasured_error_bounds(SelectionRecord(**base), sizes, final, 0.9)
    shift = np.array([0.03, 0.01, 0.005])
    shifted = unmeasured_error_bounds(SelectionRecord(**base, candidate_shift=shift), sizes, final, 0.9)
    np.testing.assert_allclose(shifted, plain + shift[[0, 2]] - shift[1], rtol=1e-12)
    assert np.all(shifted < 2.0)


# ------------------------------------------------------------------ end to end
ADULT_DOMAIN = {"workclass": ["private", "self", "gov"], "education": ["hs", "college", "grad", "other"],
                "sex": ["F", "M"], "race": ["a", "b", "c"], "age": (17, 90), "hours": (1, 99),
                "income": ["<=50K", ">50K"]}


def _adult_like(n: int = 600, seed: int = 3) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    education = rng.choice(["hs", "college", "grad", "other"], n, p=[0.4, 0.3, 0.1, 0.2])
    rich = (education == "grad") | (rng.random(n) < 0.2)
    return pl.DataFrame({
        "workclass": rng.choice(["private", "self", "gov"], n, p=[0.7, 0.1, 0.2]), "education": education,
        "sex": rng.choice(["F", "M"], n), "race": rng.choice(["a", "b", "c"], n, p=[0.8, 0.15, 0.05]),
        "age": rng.integers(17, 91, n), "hours": rng.integers(1, 100, n),
        "income": np.where(rich, ">50K", "<=50K")})


def test_an_annealed_run_closes_its_ledger_and_reports_its_rounds() -> None:
    """synthesize with CM annealed on a tiny Adult-like frame: CM events (selections and
    measurements, one Gumbel per round) add up to exactly two thirds of the budget (CM gets
    twice LT's share; the CM step is first), the whole ledger closes, the report's rounds are the
    rounds run, and no measured table is listed as unmeasured."""
    rows = _adult_like()
    result = polars_rap.synthesize(
        rows, epsilon=1.0, delta=1e-7, domain=ADULT_DOMAIN, labels=["income"], seed=1, backend="cpu", progress=False,
        strategy=ANNEALED_ONLY.but(relaxed_rows=60, rounds={"LT": 2}, workload={"n_linear_thresholds": 40},
                                   projection=ProjectionConfig(max_steps=10)))
    report = result.report
    cm = [e for e in report.events if e.description.startswith("CM")]
    cm_rounds = sorted({e.round for e in cm})
    assert math.fsum(e.rho for e in cm) == report.rho_budget * (2.0 / 3.0)
    assert report.rho_spent == math.fsum(e.rho for e in report.events) == report.rho_budget
    assert sum(e.description == "CM selection" for e in cm) == len(cm_rounds) == report.parameters["rounds"]["CM"]
    assert cm_rounds == list(range(len(cm_rounds)))  # LT rounds are numbered after them
    assert {e.round for e in report.events if e.description.startswith("LT")} == {len(cm_rounds), len(cm_rounds) + 1}
    measured = set(report.measurements.filter(pl.col("query_class") == "CM")["group"].to_list())
    unmeasured = set(report.unmeasured.filter(pl.col("query_class") == "CM")["group"].to_list())
    assert measured and not measured & unmeasured
    assert result.data.height == rows.height and result.data.schema == rows.schema


def test_a_re_measured_table_is_fitted_and_reported_twice(monkeypatch, caplog) -> None:
    """Forcing every round to pick the same table (the selection still charged): the table is
    measured once per round with its own noise, the projection weighs both measurements by
    their inverse variance, the report lists both (one interval each) and not the table among
    the unmeasured groups, the end-of-run fit line counts it once, and the ledger closes."""
    caplog.set_level(logging.INFO, logger="polars_rap.fit.loop")
    real_top_k, last_weights = annealing.gumbel_top_k, []

    def first_table(scores, k, l1, rho, ledger, rng, **kwargs):
        real_top_k(scores, k, l1, rho, ledger, rng, **kwargs)
        return np.array([0])

    real_project = rounds.project

    def spy_project(*args, weights=None, **kwargs):
        last_weights.append(weights)
        return real_project(*args, weights=weights, **kwargs)

    monkeypatch.setattr(annealing, "gumbel_top_k", first_table)
    monkeypatch.setattr(rounds, "project", spy_project)
    result = polars_rap.synthesize(
        _adult_like(), epsilon=1.0, delta=1e-7, domain=ADULT_DOMAIN, labels=["income"], seed=2, backend="cpu",
        progress=False, strategy=ANNEALED_ONLY.but(cm_step={"annealed_rounds": 6}, relaxed_rows=40, rounds={"LT": 0},
                                                   projection=ProjectionConfig(max_steps=5)))
    report = result.report
    m = report.measurements
    first = int(m["group"][0])
    measured_in = m.filter(pl.col("group") == first)["round"].unique().to_list()
    assert len(measured_in) == report.parameters["rounds"]["CM"] >= 2 and m["group"].n_unique() == 1
    stds = m.group_by("round").agg(pl.col("noise_std").first()).sort("round")["noise_std"].to_numpy()
    precision = 1.0 / m["noise_std"].to_numpy() ** 2
    np.testing.assert_allclose(last_weights[-1], precision / precision.mean(), rtol=1e-12)
    assert stds[-1] < stds[0]  # the last round took more than the first
    assert first not in report.unmeasured["group"].to_list() and report.unmeasured.height > 0
    assert report.rho_spent == math.fsum(e.rho for e in report.events) == report.rho_budget
    fit_lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("CM:")]
    assert fit_lines == [f"CM: 1 groups ({m.height} answers) measured in {len(measured_in)} steps; "
                         + fit_lines[0].split("steps; ", 1)[1]]


# ---------------------------------------------------------------- measured outright where precise enough
def test_a_precise_enough_annealed_step_measures_every_table_outright_once() -> None:
    """With the step's outright_l1 at or above the mean expected noise L1 norm the CM share's outright
    measurement of every table would carry (outright_noise_l1: sqrt(2/pi) sigma cells per
    table, sigma = l2 / sqrt(2 rho / tables)), the annealed step is one round: every CM table
    measured once, no selection, at that sigma; the CM share and the ledger close exactly.
    Below it, the run is the annealed run bit for bit."""
    from polars_rap.fit.annealing import outright_noise_l1

    rows = _adult_like()
    common = dict(epsilon=4.0, delta=1e-7, domain=ADULT_DOMAIN, labels=["income"], seed=1, backend="cpu",
                  progress=False)
    loop = dict(relaxed_rows=60, rounds={"LT": 2}, workload={"n_linear_thresholds": 40},
                projection=ProjectionConfig(max_steps=10))
    annealed = polars_rap.synthesize(rows, strategy=ANNEALED_ONLY.but(**loop), **common)
    cm_rho = annealed.report.rho_budget * (2.0 / 3.0)
    cells = np.array([3 * 4, 3 * 2, 3 * 3, 4 * 2, 4 * 3, 2 * 3]) * 2  # feature pairs x income
    l2 = math.sqrt(2.0) / rows.height
    sigma = l2 / math.sqrt(2.0 * cm_rho / len(cells))
    noise_l1 = float(np.mean(math.sqrt(2.0 / math.pi) * sigma * cells))
    assert outright_noise_l1(np.full(len(cells), l2), cells, cm_rho) == pytest.approx(noise_l1, rel=1e-14)

    precise = polars_rap.synthesize(
        rows, strategy=ANNEALED_ONLY.but(cm_step={"outright_l1": noise_l1 * 1.0001}, **loop), **common)
    report = precise.report
    cm = [e for e in report.events if e.description.startswith("CM")]
    assert not any(e.description == "CM selection" for e in cm)
    assert {e.round for e in cm} == {0} and report.parameters["rounds"]["CM"] == 1
    assert len(cm) == len(cells) and math.fsum(e.rho for e in cm) == cm_rho
    assert report.rho_spent == report.rho_budget
    measured = report.measurements.filter(pl.col("query_class") == "CM")
    assert measured.group_by("group").len().height == len(cells) == measured["group"].n_unique()
    assert sorted(measured.group_by("group").len()["len"].to_list()) == sorted(cells.tolist())
    np.testing.assert_allclose(measured["noise_std"].to_numpy(), sigma, rtol=1e-9)
    assert report.unmeasured.filter(pl.col("query_class") == "CM").height == 0

    loose = polars_rap.synthesize(
        rows, strategy=ANNEALED_ONLY.but(cm_step={"outright_l1": noise_l1 * 0.9999}, **loop), **common)
    assert _fingerprint(loose) == _fingerprint(annealed)
