"""The independence prior for unmeasured CM tables (polars_rap.fit.independence_prior) and its
use in the loop: its math, which tables it covers, that it is post-processing, and its public
variant (``public_use=["interactions"]``: the public table's odds ratios raked to the relaxed
margins)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.fit import rounds
from polars_rap.fit.independence_prior import PriorSettings, conditional_independence, conditional_mutual_information, independence_targets, mediated_interaction, mediated_targets, public_strength, raked_interaction, unmeasured_marginals
from polars_rap.workload.queries import QueryClass
from polars_rap.fit.strategy import PlannedStrategy

from plans import OUTRIGHT, TestPlanned  # tests/plans.py

ADULT_DOMAIN = {"workclass": ["private", "self", "gov"], "education": ["hs", "college", "grad", "other"],
                "sex": ["F", "M"], "race": ["a", "b", "c"], "age": (17, 90), "hours": (1, 99),
                "income": ["<=50K", ">50K"]}
AIM_LOOP = TestPlanned(base_share=0.1, independence_prior=False, histogram_share=0.0,
                       cm_step=(("annealed_rounds", 8), ("outright_l1", None)))
"""The annealed loop without a prior, always annealed (tiny tables have little noise) and
without numeric histograms (their loss scale would enter the weights these tests compute):
each test sets the prior it is about."""
SHORT = dict(relaxed_rows=60, rounds={"LT": 2}, workload={"n_linear_thresholds": 100},
             projection=polars_rap.ProjectionConfig(max_steps=5))
"""The loop settings of the short runs on :data:`AIM_LOOP` (``AIM_LOOP.but(**SHORT)``)."""


def _adult_like(n: int = 800, seed: int = 5) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    education = rng.choice(["hs", "college", "grad", "other"], n, p=[0.4, 0.3, 0.1, 0.2])
    rich = (education == "grad") | (rng.random(n) < 0.2)
    workclass = np.where(rich & (rng.random(n) < 0.5), "self", rng.choice(["private", "gov"], n, p=[0.8, 0.2]))
    return pl.DataFrame({
        "workclass": workclass, "education": education,
        "sex": rng.choice(["F", "M"], n), "race": rng.choice(["a", "b", "c"], n, p=[0.8, 0.15, 0.05]),
        "age": rng.integers(17, 91, n), "hours": rng.integers(1, 100, n),
        "income": np.where(rich, ">50K", "<=50K")})


def _associated(n: int, seed: int) -> pl.DataFrame:
    """Rows whose categorical features all depend on a hidden class (strong associations
    between every pair, given the label too): a public sample of the same population shares
    them."""
    rng = np.random.default_rng(seed)
    hidden = rng.integers(0, 3, n)

    def pick(values, weights):
        probabilities = np.asarray(weights, dtype=np.float64)[hidden]
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        draws = (rng.random(n)[:, None] > np.cumsum(probabilities, axis=1)).sum(axis=1)
        return np.asarray(values)[draws]

    return pl.DataFrame({
        "workclass": pick(["private", "self", "gov"], [[8, 1, 1], [1, 8, 1], [1, 1, 8]]),
        "education": pick(["hs", "college", "grad", "other"], [[6, 2, 1, 1], [1, 6, 2, 1], [1, 1, 6, 2]]),
        "sex": pick(["F", "M"], [[5, 1], [1, 5], [3, 3]]),
        "race": pick(["a", "b", "c"], [[8, 1, 1], [1, 8, 1], [1, 1, 8]]),
        "age": rng.integers(17, 91, n), "hours": rng.integers(1, 100, n),
        "income": np.where(rng.random(n) < np.array([0.1, 0.5, 0.9])[hidden], ">50K", "<=50K")})


# ------------------------------------------------------------------ the math
def test_the_fit_is_the_product_of_the_margins_over_the_label() -> None:
    """m[a, b, c] = T[a, +, c] T[+, b, c] / T[+, +, c], cell by cell, on a table with an
    interaction; its A x C and B x C margins are the table's, and a table that is already
    independent given C is returned to float precision."""
    rng = np.random.default_rng(1)
    table = rng.dirichlet(np.full(24, 0.6))
    fit = conditional_independence(table, (4, 3, 2)).reshape(4, 3, 2)
    cube = table.reshape(4, 3, 2)
    for a, b, c in np.ndindex(4, 3, 2):
        expected = cube[a, :, c].sum() * cube[:, b, c].sum() / cube[:, :, c].sum()
        assert fit[a, b, c] == pytest.approx(expected, rel=1e-14)
    np.testing.assert_allclose(fit.sum(axis=1), cube.sum(axis=1), rtol=1e-13)
    np.testing.assert_allclose(fit.sum(axis=0), cube.sum(axis=0), rtol=1e-13)
    independent = fit.ravel()
    np.testing.assert_allclose(conditional_independence(independent, (4, 3, 2)), independent, rtol=1e-13)


def test_empty_slices_and_negative_margins() -> None:
    """A label value with no mass gets zeros (no division by zero); a negative margin (noisy
    answers) counts as 0; a two-axis table is independence of its two axes."""
    cube = np.zeros((2, 2, 2))
    cube[:, :, 0] = [[0.4, 0.1], [0.1, 0.4]]
    fit = conditional_independence(cube.ravel(), (2, 2, 2)).reshape(2, 2, 2)
    np.testing.assert_array_equal(fit[:, :, 1], 0.0)
    np.testing.assert_allclose(fit[:, :, 0], 0.25, rtol=1e-15)
    negative = np.array([[0.5, -0.2], [0.2, 0.5]])  # row 0 sums to 0.3, column 1 to 0.3
    fit2 = conditional_independence(negative.ravel(), (2, 2)).reshape(2, 2)
    np.testing.assert_allclose(fit2, np.outer([0.3, 0.7], [0.7, 0.3]), rtol=1e-14)


def test_unmeasured_marginals_are_the_cm_groups_left() -> None:
    """Every CM group not measured, in id order; base marginals (one feature x label) and
    threshold groups never, whatever was measured."""
    frame = _adult_like(200)
    domain = polars_rap.Domain.from_mapping(frame.schema, ADULT_DOMAIN, ["income"])
    from polars_rap.fit.planning import workload_and_plan

    queries, _, counts = workload_and_plan(
        domain, PlannedStrategy(base_share=0.1), np.random.default_rng(0), rounds_cm=None, rounds_lt=2,
        rounds_mm=0, queries_per_round=5, n_mixed_marginals=0, n_linear_thresholds=50, max_marginal_cells=None)
    cm = np.flatnonzero(queries.group_class == QueryClass.CATEGORICAL_MARGINAL)
    assert len(cm) == counts["CM"] == 6 and counts["BM"] == 4
    np.testing.assert_array_equal(unmeasured_marginals(queries, []), cm)
    np.testing.assert_array_equal(unmeasured_marginals(queries, [cm[1], cm[4], len(cm) + 3]),
                                  np.delete(cm, [1, 4]))
    answers = np.random.default_rng(2).random(int(queries.group_sizes[cm].sum()))
    targets = independence_targets(queries, cm, answers)
    starts = np.concatenate([[0], np.cumsum(queries.group_sizes[cm])])
    for i, group in enumerate(cm):
        part = slice(starts[i], starts[i + 1])
        np.testing.assert_array_equal(targets[part],
                                      conditional_independence(answers[part], queries.marginal_shape(group)))


# ------------------------------------------------------------------ in the loop
def test_the_prior_is_post_processing_of_the_relaxed_rows(monkeypatch) -> None:
    """Every projection of a run with the prior fits the released measurements (targets equal
    to the report's noisy answers, in order) and, once a categorical table is measured, every
    CM table not measured yet at the independence fit of the relaxed rows the projection
    starts from (recomputed here from those rows and public shapes alone), weighed as a
    measurement with the largest categorical std so far (weights 1/std^2, mean 1). The ledger
    closes at the budget: the prior charges nothing."""
    from polars_rap.kernels import resolve_backend

    pseudo_calls, project_calls = [], []
    real_pseudo, real_project = rounds.independence_pseudo_targets, rounds.project

    def spy_pseudo(record, queries, backend, public=None, memo=None, settings=None):
        assert public is None and settings == PriorSettings()  # no public table, no mediators: independence
        out = real_pseudo(record, queries, backend, public, memo, settings=settings)
        pseudo_calls.append((list(record.groups), list(record.noise_stds), record.params.copy(), queries, out))
        return out

    def spy_project(params, queries, targets, backend, config, anneal=True, weights=None, warm=False):
        project_calls.append((np.array(targets, copy=True), None if weights is None else weights.copy()))
        return real_project(params, queries, targets, backend, config, anneal=anneal, weights=weights, warm=warm)

    monkeypatch.setattr(rounds, "independence_pseudo_targets", spy_pseudo)
    monkeypatch.setattr(rounds, "project", spy_project)
    result = polars_rap.synthesize(
        _adult_like(), epsilon=2.0, delta=1e-7, domain=ADULT_DOMAIN, labels=["income"], seed=3, backend="cpu",
        progress=False, strategy=AIM_LOOP.but(independence_prior=True, **SHORT))
    report = result.report
    assert report.parameters["strategy"]["independence_prior"] is True
    assert report.rho_spent == math.fsum(e.rho for e in report.events) == report.rho_budget
    noisy = report.measurements["noisy_answer"].to_numpy()
    backend = resolve_backend("cpu")
    assert len(pseudo_calls) == len(project_calls) >= 4
    with_prior = 0
    for (groups, stds, params, queries, (pseudo, targets, prior_std)), (fitted, weights) in zip(
            pseudo_calls, project_calls, strict=True):
        classes = queries.group_class[groups]
        sizes = queries.group_sizes[groups]
        k = int(sizes.sum())
        np.testing.assert_array_equal(fitted[:k], noisy[:k])  # the released answers, as released
        cm = np.flatnonzero(queries.group_class == QueryClass.CATEGORICAL_MARGINAL)
        categorical = np.isin(classes, (QueryClass.CATEGORICAL_MARGINAL, QueryClass.BASE_MARGINAL))
        if not categorical.any():
            assert len(pseudo) == 0 and len(fitted) == k
            continue
        np.testing.assert_array_equal(pseudo, np.setdiff1d(cm, groups))
        if len(pseudo) == 0:
            continue
        with_prior += 1
        assert prior_std == max(s for s, c in zip(stds, categorical) if c)
        relaxed = backend.answers_relaxed(params.relaxed(), queries.take_groups(pseudo), np.inf).astype(np.float64)
        parts = np.split(relaxed, np.cumsum(queries.group_sizes[pseudo])[:-1])
        expected = np.concatenate([conditional_independence(part, queries.marginal_shape(int(g)))
                                   for g, part in zip(pseudo, parts, strict=True)])
        np.testing.assert_array_equal(targets, expected)
        np.testing.assert_array_equal(fitted[k:], expected)
        raw = np.concatenate([1.0 / np.repeat(np.square(stds), sizes), np.full(len(expected), 1.0 / prior_std**2)])
        np.testing.assert_allclose(weights, raw / raw.mean(), rtol=1e-12)
    assert with_prior >= 2


def test_without_unmeasured_tables_the_prior_changes_nothing() -> None:
    """With every CM table measured outright (the outright plan) no table is left for the
    prior: the run is the same to the last bit with it on or off."""
    frame = _adult_like(500)
    common = dict(epsilon=1.0, delta=1e-7, domain=ADULT_DOMAIN, labels=["income"], seed=1, backend="cpu",
                  progress=False)
    loop = dict(relaxed_rows=40, rounds={"LT": 2}, workload={"n_linear_thresholds": 60},
                projection=polars_rap.ProjectionConfig(max_steps=4))
    on = polars_rap.synthesize(frame, strategy=OUTRIGHT.but(independence_prior=True, **loop), **common)
    off = polars_rap.synthesize(frame, strategy=OUTRIGHT.but(**loop), **common)
    np.testing.assert_array_equal(on.relaxed, off.relaxed)
    assert on.data.equals(off.data)


def test_bad_settings_are_named() -> None:
    with pytest.raises(ValueError, match="independence_prior must be True, False or 'mediated'"):
        PlannedStrategy(independence_prior=1)
    with pytest.raises(ValueError, match="independence_prior must be True, False or 'mediated'"):
        PlannedStrategy(independence_prior="label")


# ------------------------------------------------------------------ public interactions (issue 19)
@pytest.fixture(scope="module")
def marginals_only():
    """The CM workload of the Adult-like domain (6 tables: 4 features x income), no thresholds."""
    from polars_rap.fit.planning import workload_and_plan

    frame = _adult_like(200)
    domain = polars_rap.Domain.from_mapping(frame.schema, ADULT_DOMAIN, ["income"])
    queries, _, _ = workload_and_plan(
        domain, PlannedStrategy(), np.random.default_rng(0), rounds_cm=None, rounds_lt=0, rounds_mm=0,
        queries_per_round=5, n_mixed_marginals=0, n_linear_thresholds=0, max_marginal_cells=None)
    return queries


def _positive_table(shape, seed) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.full(int(np.prod(shape)), 2.0))


def test_raking_keeps_the_public_odds_ratios_and_takes_the_relaxed_margins(monkeypatch) -> None:
    """Without the floor, IPF's limit has the relaxed table's A x C and B x C margins and the
    public table's cross-product ratios p[a,b,c] p[a',b',c] / (p[a,b',c] p[a',b,c]) (the
    maximum-entropy table with those margins and that association); with the floor, the margins
    still hold and the ratios move by about the floor's 1%."""
    from polars_rap.fit import independence_prior

    shape = (4, 3, 2)
    public, table = _positive_table(shape, 1), _positive_table(shape, 2)

    def odds(cube):
        cube = cube.reshape(shape)
        return cube[0, 0] * cube[1:, 1:] / (cube[0, 1:] * cube[1:, :1])

    monkeypatch.setattr(independence_prior, "RAKING_FLOOR", 0.0)
    monkeypatch.setattr(independence_prior, "RAKING_SWEEPS", 200)
    raked = independence_prior.raked_interaction(public, table, shape).reshape(shape)
    cube = table.reshape(shape)
    np.testing.assert_allclose(raked.sum(axis=1), cube.sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(raked.sum(axis=0), cube.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(odds(raked), odds(public), rtol=1e-12)
    monkeypatch.undo()
    floored = raked_interaction(public, table, shape).reshape(shape)
    np.testing.assert_allclose(floored.sum(axis=1), cube.sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(floored.sum(axis=0), cube.sum(axis=0), rtol=1e-6)
    assert np.abs(np.log(odds(floored) / odds(public))).max() < 0.05


def test_a_public_table_independent_given_the_label_rakes_to_independence() -> None:
    """A public table already independent given C with the relaxed margins rakes to the
    independence fit itself: the public use then adds nothing to the prior without it."""
    shape = (3, 4, 2)
    table = _positive_table(shape, 4)
    independent = conditional_independence(table, shape)
    np.testing.assert_allclose(raked_interaction(independent, table, shape), independent, rtol=1e-12)


def test_the_public_interactions_replace_independence_where_the_public_table_has_the_columns(marginals_only) -> None:
    """independence_targets with public answers: raked where a group's public answers are all
    there, independence where any is missing (NaN: columns the public table lacks)."""
    queries = marginals_only
    cm = np.flatnonzero(queries.group_class == QueryClass.CATEGORICAL_MARGINAL)
    rng = np.random.default_rng(5)
    public = rng.random(queries.n_queries)
    public[queries.group_query_indices(cm[2:3])[0]] = np.nan
    answers = rng.random(int(queries.group_sizes[cm].sum()))
    targets = independence_targets(queries, cm, answers, public)
    starts = np.concatenate([[0], np.cumsum(queries.group_sizes[cm])])
    for i, group in enumerate(cm):
        part, shape = slice(starts[i], starts[i + 1]), queries.marginal_shape(group)
        expected = (conditional_independence(answers[part], shape) if i == 2 else
                    raked_interaction(public[queries.group_query_indices(np.array([group]))], answers[part], shape))
        np.testing.assert_array_equal(targets[part], expected)


def test_public_interactions_in_a_run_are_post_processing_of_the_relaxed_rows_and_the_public_table(monkeypatch) -> None:
    """synthesize(public=..., public_use=["interactions"]) with annealed CM: every pseudo-target
    the loop fits is the raked public table of a CM group not measured yet, recomputed here from
    the relaxed rows it started from and the public answers alone; the ledger closes; the report
    records the use."""
    from polars_rap.kernels import resolve_backend

    calls = []
    real_pseudo = rounds.independence_pseudo_targets

    def spy_pseudo(record, queries, backend, public=None, memo=None, settings=None):
        assert settings is None  # public interactions alone
        out = real_pseudo(record, queries, backend, public, memo)
        calls.append((SimpleNamespace(groups=list(record.groups), noisy_parts=list(record.noisy_parts)),
                      record.params.copy(), queries, public, out))
        return out

    monkeypatch.setattr(rounds, "independence_pseudo_targets", spy_pseudo)
    private, public_rows = _associated(1500, seed=5), _associated(1500, seed=9)
    result = polars_rap.synthesize(  # associations shared by both samples, well above the noise
        private, epsilon=4.0, delta=1e-7, domain=ADULT_DOMAIN, labels=["income"], seed=2, backend="cpu",
        progress=False, strategy=AIM_LOOP.but(**SHORT),
        public=public_rows, public_use=["interactions"])
    report = result.report
    assert report.public_data["uses"] == ["interactions"]
    assert report.rho_spent == math.fsum(e.rho for e in report.events) == report.rho_budget
    backend = resolve_backend("cpu")
    raked = 0
    for released, params, queries, public, (pseudo, targets, _) in calls:
        assert public is not None and not np.isnan(public).any()
        if len(pseudo) == 0:
            continue
        relaxed = backend.answers_relaxed(params.relaxed(), queries.take_groups(pseudo), np.inf).astype(np.float64)
        parts = np.split(relaxed, np.cumsum(queries.group_sizes[pseudo])[:-1])
        strength = public_strength(released, queries, public)
        raked += strength > 0.0
        expected = np.concatenate([
            raked_interaction(public[queries.group_query_indices(np.array([g]))], part, queries.marginal_shape(int(g)),
                              strength)
            if strength > 0.0 else conditional_independence(part, queries.marginal_shape(int(g)))
            for g, part in zip(pseudo, parts, strict=True)])
        np.testing.assert_array_equal(targets, expected)
    assert raked >= 2  # the public rows come from the same population: their associations win


def test_the_public_strength_is_what_the_measured_tables_support(marginals_only) -> None:
    """public_strength picks, among 0, 1/4, ..., 1, the scale of the public log odds ratios that
    best fits the measured CM tables (each fit on the noisy table's margins): a public table with
    the true associations gets 1, one with reversed associations 0 (independence), one with
    them doubled 1/2, and no measured CM table gives 0."""
    queries = marginals_only
    cm = np.flatnonzero(queries.group_class == QueryClass.CATEGORICAL_MARGINAL)
    rng = np.random.default_rng(8)

    def tables(transform):
        return np.concatenate([transform(_positive_table(queries.marginal_shape(g), 10 + g), g)
                               for g in range(queries.n_groups)])

    truth = tables(lambda t, g: t)
    noisy = [truth[queries.group_query_indices(np.array([g]))] + rng.normal(0, 1e-4, queries.group_sizes[g])
             for g in cm[:3]]
    released = SimpleNamespace(groups=list(cm[:3]), noisy_parts=noisy)
    assert public_strength(released, queries, truth) == 1.0
    reversed_public = tables(lambda t, g: 1.0 / t)  # every log odds ratio negated
    assert public_strength(released, queries, reversed_public) == 0.0
    doubled = tables(lambda t, g: t**2)  # every log odds ratio doubled: the truth is strength 1/2
    assert public_strength(released, queries, doubled) == 0.5
    assert public_strength(SimpleNamespace(groups=[], noisy_parts=[]), queries, truth) == 0.0


def test_strength_scales_the_log_odds_ratios(monkeypatch) -> None:
    """raked_interaction at strength s has the public log odds ratios times s (no floor, IPF to
    convergence); s = 0 is the independence fit."""
    from polars_rap.fit import independence_prior

    shape = (3, 3, 2)
    public, table = _positive_table(shape, 21), _positive_table(shape, 22)
    monkeypatch.setattr(independence_prior, "RAKING_FLOOR", 0.0)
    monkeypatch.setattr(independence_prior, "RAKING_SWEEPS", 300)

    def log_odds(cube):
        cube = cube.reshape(shape)
        return np.log(cube[0, 0] * cube[1:, 1:] / (cube[0, 1:] * cube[1:, :1]))

    half = independence_prior.raked_interaction(public, table, shape, 0.5)
    np.testing.assert_allclose(log_odds(half), 0.5 * log_odds(public), rtol=1e-10)
    none = independence_prior.raked_interaction(public, table, shape, 0.0)
    np.testing.assert_allclose(none, conditional_independence(table, shape), rtol=1e-10)


# ------------------------------------------------------------------ the mediated prior
def test_mediation_recovers_a_table_independent_given_the_third_feature() -> None:
    """Where a and b are independent given (c, r), the mediated table built from the a x c x r
    and b x c x r tables is the true a x b x r table; on any tables it is the formula cell by
    cell, and keeps the a x r and b x r margins."""
    rng = np.random.default_rng(4)
    p_r = rng.dirichlet(np.ones(2))
    p_c = rng.dirichlet(np.ones(3), size=2)  # [r, c]
    p_a = rng.dirichlet(np.ones(4), size=(3, 2))  # [c, r, a]
    p_b = rng.dirichlet(np.ones(5), size=(3, 2))  # [c, r, b]
    joint = np.einsum("r,rc,cra,crb->abcr", p_r, p_c, p_a, p_b)
    fit = mediated_interaction(joint.sum(axis=1), joint.sum(axis=0))
    np.testing.assert_allclose(fit, joint.sum(axis=2), rtol=1e-12)

    first, second = rng.dirichlet(np.ones(24)).reshape(4, 3, 2), rng.dirichlet(np.ones(30)).reshape(5, 3, 2)
    second *= (first.sum(axis=0) / second.sum(axis=0))[None]  # the same c x r margins, as one relaxed table
    fit = mediated_interaction(first, second)
    for a, b, r in np.ndindex(4, 5, 2):
        expected = sum(first[a, c, r] * second[b, c, r] / first[:, c, r].sum() for c in range(3))
        assert fit[a, b, r] == pytest.approx(expected, rel=1e-13)
    np.testing.assert_allclose(fit.sum(axis=1), first.sum(axis=1), rtol=1e-13)
    np.testing.assert_allclose(fit.sum(axis=0), second.sum(axis=1), rtol=1e-13)


def test_conditional_mutual_information() -> None:
    """0 for a table independent given r; the plug-in formula otherwise; scale-free."""
    rng = np.random.default_rng(5)
    table = rng.dirichlet(np.ones(12)).reshape(3, 2, 2)
    assert conditional_mutual_information(conditional_independence(table.ravel(), (3, 2, 2)).reshape(3, 2, 2)) \
        == pytest.approx(0.0, abs=1e-15)
    expected = sum(table[a, b, r] * math.log(table[a, b, r] * table[:, :, r].sum()
                                             / (table[a, :, r].sum() * table[:, b, r].sum()))
                   for a, b, r in np.ndindex(3, 2, 2))
    assert conditional_mutual_information(table) == pytest.approx(expected, rel=1e-12)
    assert conditional_mutual_information(7.0 * table) == pytest.approx(expected, rel=1e-12)


def _tables_of(queries, groups, joint: np.ndarray, axis_of: dict[int, int]) -> dict[int, np.ndarray]:
    """Each group's table from ``joint`` (one axis per CM column, ``axis_of`` block -> axis, the
    label last), in the group's own column order, flattened."""
    out = {}
    for group in map(int, groups):
        columns = [int(c) for c in queries.group_columns[
            queries.group_column_offsets[group]:queries.group_column_offsets[group + 1]]]
        keep = [axis_of[c] for c in columns]
        drop = tuple(i for i in range(joint.ndim) if i not in keep)
        out[group] = np.moveaxis(joint.sum(axis=drop), np.argsort(np.argsort(keep)), range(len(keep))).ravel()
    return out


def test_mediated_targets_take_the_strongest_mediator_and_leave_the_rest(marginals_only) -> None:
    """An unmeasured table whose two features each share a measured table with a third gets
    the mediated table through the third with the largest min(I(a; c | label), I(b; c |
    label)); one with no such third feature is left out (it keeps independence)."""
    queries = marginals_only
    cm = np.flatnonzero(queries.group_class == QueryClass.CATEGORICAL_MARGINAL)
    columns = {int(g): tuple(int(c) for c in queries.group_columns[
        queries.group_column_offsets[g]:queries.group_column_offsets[g + 1]]) for g in cm}
    features = sorted({c for cols in columns.values() for c in cols[:2]})
    label = columns[int(cm[0])][2]
    axis_of = {c: i for i, c in enumerate([*features, label])}
    joint = np.random.default_rng(6).dirichlet(np.full(int(np.prod(queries.column_sizes[[*features, label]])), 0.3))
    joint = joint.reshape(tuple(int(queries.column_sizes[c]) for c in [*features, label]))
    tables = _tables_of(queries, cm, joint, axis_of)
    group_of = {frozenset(cols[:2]): g for g, cols in columns.items()}
    f0, f1, f2, f3 = features

    def cmi(g, first):
        return conditional_mutual_information(
            _tables_of(queries, [g], joint, axis_of)[g].reshape(*queries.marginal_shape(g)[:2], -1))

    # measured: (f0, f1), (f1, f2): (f0, f2) is mediated by f1 alone; nothing mediates the tables of f3
    measured = np.array(sorted([group_of[frozenset((f0, f1))], group_of[frozenset((f1, f2))]]))
    unmeasured = np.setdiff1d(cm, measured)
    out = mediated_targets(queries, unmeasured, measured, tables)
    target = group_of[frozenset((f0, f2))]
    assert set(out) == {target}
    a, b = columns[target][:2]
    first = joint.sum(axis=tuple(axis_of[c] for c in features if c not in (a, f1)))  # [a, f1, label] in axis order
    second = joint.sum(axis=tuple(axis_of[c] for c in features if c not in (b, f1)))
    if axis_of[a] > axis_of[f1]:
        first = first.transpose(1, 0, 2)
    if axis_of[b] > axis_of[f1]:
        second = second.transpose(1, 0, 2)
    np.testing.assert_allclose(out[target], mediated_interaction(first, second).ravel(), rtol=1e-12)

    # measured: every table but (f0, f2) and (f1, f3): each has two candidate mediators
    measured = np.setdiff1d(cm, [group_of[frozenset((f0, f2))], group_of[frozenset((f1, f3))]])
    unmeasured = np.setdiff1d(cm, measured)
    out = mediated_targets(queries, unmeasured, measured, tables)
    assert set(out) == set(map(int, unmeasured))
    for g in map(int, unmeasured):
        a, b = columns[g][:2]
        scores = {c: min(cmi(group_of[frozenset((a, c))], a), cmi(group_of[frozenset((b, c))], b))
                  for c in features if c not in (a, b)}
        best = max(scores, key=scores.get)
        first = _tables_of(queries, [group_of[frozenset((a, best))]], joint, axis_of)
        second = _tables_of(queries, [group_of[frozenset((b, best))]], joint, axis_of)
        (ga, ta), (gb, tb) = next(iter(first.items())), next(iter(second.items()))
        ta = ta.reshape(*queries.marginal_shape(ga)[:2], -1)
        tb = tb.reshape(*queries.marginal_shape(gb)[:2], -1)
        ta = ta if columns[ga][0] == a else ta.transpose(1, 0, 2)
        tb = tb if columns[gb][0] == b else tb.transpose(1, 0, 2)
        np.testing.assert_allclose(out[g], mediated_interaction(ta, tb).ravel(), rtol=1e-12)
        assert sorted(scores.values())[-1] > sorted(scores.values())[-2]  # a real choice was made


def test_the_mediated_prior_in_a_run_is_post_processing(monkeypatch) -> None:
    """With ``independence_prior="mediated"`` every projection fits the released answers and,
    for the CM tables not measured yet, the mediated tables of the relaxed rows it starts from
    (independence given the label where nothing mediates), recomputed here from those rows;
    some table is mediated in the run; the ledger closes at the budget. Only the measured
    tables :func:`significant_links` keeps at MEDIATOR_GATE link two features."""
    from polars_rap.fit.independence_prior import MEDIATOR_GATE, significant_links
    from polars_rap.fit.independence_prior import unmeasured_marginals
    from polars_rap.kernels import resolve_backend

    calls = []
    real_pseudo = rounds.independence_pseudo_targets

    def spy_pseudo(record, queries, backend, public=None, memo=None, settings=None):
        assert settings == PriorSettings(mediated=True) and public is None
        out = real_pseudo(record, queries, backend, public, memo, settings=settings)
        links = significant_links(record, queries, MEDIATOR_GATE)
        calls.append((list(record.groups), record.params.copy(), queries, out, links))
        return out

    monkeypatch.setattr(rounds, "independence_pseudo_targets", spy_pseudo)
    result = polars_rap.synthesize(
        _associated(900, 7), epsilon=3.0, delta=1e-7, domain=ADULT_DOMAIN, labels=["income"], seed=2,
        backend="cpu", progress=False, strategy=AIM_LOOP.but(independence_prior="mediated", **SHORT))
    assert result.report.parameters["strategy"]["independence_prior"] == "mediated" and MEDIATOR_GATE == 1.0
    assert result.report.rho_spent == result.report.rho_budget
    backend = resolve_backend("cpu")
    mediated_calls = 0
    for groups, params, queries, (pseudo, targets, _), links in calls:
        if len(pseudo) == 0:
            continue
        np.testing.assert_array_equal(pseudo, unmeasured_marginals(queries, groups))
        measured = np.unique([g for g in groups if queries.group_class[g] == QueryClass.CATEGORICAL_MARGINAL
                              and g in links])
        every = np.concatenate([pseudo, measured]).astype(np.int64)
        relaxed = backend.answers_relaxed(params.relaxed(), queries.take_groups(every), np.inf)
        parts = np.split(relaxed, np.cumsum(queries.group_sizes[every])[:-1])
        tables = dict(zip(map(int, every), parts, strict=True))
        mediated = mediated_targets(queries, pseudo, measured, tables)
        mediated_calls += bool(mediated)
        expected = np.concatenate([mediated[int(g)] if int(g) in mediated
                                   else conditional_independence(tables[int(g)], queries.marginal_shape(int(g)))
                                   for g in pseudo])
        np.testing.assert_array_equal(targets, expected)
    assert mediated_calls >= 1


def test_significant_links_keep_the_tables_whose_interaction_outweighs_their_noise(marginals_only) -> None:
    """A measured table links where ||y - m(y)||^2 > (1 + gate) cells sigma^2 for its
    measurements combined by inverse variance: a strong interaction measured with little noise
    links, independence plus noise does not, and two measurements of a table count as one of
    their combined std. Only CM groups are considered."""
    from polars_rap.fit.independence_prior import significant_links
    from polars_rap.fit.loop_record import LoopRecord

    queries = marginals_only
    cm = np.flatnonzero(queries.group_class == QueryClass.CATEGORICAL_MARGINAL)
    rng = np.random.default_rng(8)
    strong, flat, twice = (int(g) for g in cm[:3])
    record = LoopRecord(params=None)
    shape = queries.marginal_shape(strong)
    table = rng.dirichlet(np.full(int(np.prod(shape)), 0.2))  # far from independence
    record.add(strong, 0, table + rng.normal(0.0, 1e-4, table.size), 1e-4)
    shape = queries.marginal_shape(flat)
    independent = conditional_independence(rng.dirichlet(np.ones(int(np.prod(shape)))), shape)
    record.add(flat, 1, independent + rng.normal(0.0, 0.05, independent.size), 0.05)
    shape = queries.marginal_shape(twice)
    cube = rng.dirichlet(np.ones(int(np.prod(shape))))
    first, second = cube + rng.normal(0.0, 0.02, cube.size), cube + rng.normal(0.0, 0.02, cube.size)
    record.add(twice, 2, first, 0.02)
    record.add(twice, 3, second, 0.02)
    combined = (first + second) / 2.0
    energy = float(np.sum(np.square(combined - conditional_independence(combined, shape))))
    ratio = energy / (cube.size * 0.02**2 / 2.0)  # the combined variance: sigma^2 / 2
    links = significant_links(record, queries, gate=0.0)
    assert strong in links and flat not in links
    assert (twice in links) == (ratio > 1.0)
    assert (twice in significant_links(record, queries, gate=ratio - 1.0 + 1e-9)) is False
    assert (twice in significant_links(record, queries, gate=max(ratio - 1.0 - 1e-9, 0.0))) == (ratio > 1.0)
