"""Numeric ties (:mod:`polars_rap.decode.numeric_ties`): the tables, their sensitivity and release, the
fit and the decoding that follows it, saved models and synthesize's wiring."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

import polars_rap
from polars_rap.schema.domain import Domain
from polars_rap.errors import ParameterError
from polars_rap.decode.numeric_ties import TIE_QUANTUM, NumericTies, TieScores, TieSums, release_ties, tie_layout, tie_noise_std, tie_sums
from polars_rap.decode.tie_ridge import fit_ties
from polars_rap.fit.planned_strategy import PlannedStrategy
from polars_rap.privacy.ledger import PrivacyEvent, PrivacyLedger
from polars_rap.schema.encoding import encode
from polars_rap.kernels import get_backend
from polars_rap.io.source import DataSource, exact_answers
from polars_rap.workload.builders import build_workload
from tie_rows import one_hot_relaxed, worst_replacement  # tests/tie_rows.py


def _domain(nullable: bool = True) -> Domain:
    schema = {"sex": pl.String, "edu": pl.String, "age": pl.Float64, "hours": pl.Float64, "y": pl.String}
    declared = {"sex": ["F", "M"], "edu": ["a", "b", "c"], "age": (0.0, 1.0),
                "hours": {"bounds": (0.0, 1.0), "nullable": True} if nullable else (0.0, 1.0), "y": ["n", "p"]}
    return Domain.from_mapping(schema, declared, labels=["y"])


def _rows(domain: Domain, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random encoded rows: codes int32[n, n_blocks], numerics float64[n, 2] in [0, 1] (a null 0)."""
    codes = np.column_stack([rng.integers(0, block.n_codes, n) for block in domain.blocks]).astype(np.int32)
    numerics = rng.random((n, len(domain.numeric_columns)))
    for j, spec in enumerate(domain.numeric_columns):
        if spec.nullable:
            numerics[codes[:, domain.block_index(spec.name, indicator=True)] == 1, j] = 0.0
    return codes, numerics


def test_layout_pairs_each_numeric_with_every_feature_but_its_own_null_indicator() -> None:
    domain = _domain()
    layout = tie_layout(domain)
    names = [(domain.numeric_columns[j].name, domain.blocks[a].source, domain.blocks[a].indicator)
             for j, a, _ in layout.tables]
    assert names == [("age", "sex", False), ("age", "edu", False), ("age", "hours", True),
                     ("hours", "sex", False), ("hours", "edu", False)]
    assert layout.n_cells == 2 * (2 + 3 + 2) + 2 * (2 + 3)
    assert layout.l2_sensitivity_squared == 2 * 5 * TIE_QUANTUM**2
    no_label = Domain.from_mapping({"sex": pl.String, "age": pl.Float64}, {"sex": ["F", "M"], "age": (0.0, 1.0)})
    assert tie_layout(no_label) is None


def test_the_pass_reads_the_sums_batch_by_batch_exactly() -> None:
    """Read beside the answers in batches of 7 rows, the sums equal those of all rows at once."""
    domain = _domain()
    layout = tie_layout(domain)
    codes, numerics = _rows(domain, 100, np.random.default_rng(9))
    hours = [None if null else float(v) for null, v in zip(codes[:, 3] == 1, numerics[:, 1], strict=True)]
    values = {"sex": np.array(["F", "M"])[codes[:, 0]], "edu": np.array(["a", "b", "c"])[codes[:, 1]],
              "age": numerics[:, 0], "hours": hours,
              "y": np.array(["n", "p"])[codes[:, 2]]}
    frame = pl.DataFrame(values, schema={"sex": pl.String, "edu": pl.String, "age": pl.Float64,
                                         "hours": pl.Float64, "y": pl.String})
    queries = build_workload(domain, np.random.default_rng(0), n_linear_thresholds=10, n_mixed_marginals=10)
    statistic = TieSums(domain, layout)
    exact_answers(DataSource.from_input(frame), domain, queries, get_backend("cpu"), batch_rows=7,
                  statistic=statistic)
    encoded = encode(frame, domain)
    assert np.array_equal(statistic.totals, tie_sums(encoded.codes, encoded.numerics, domain, layout))


def test_sums_are_each_cells_quantized_values_row_by_row() -> None:
    domain = _domain()
    layout = tie_layout(domain)
    codes, numerics = _rows(domain, 200, np.random.default_rng(0))
    sums = tie_sums(codes, numerics, domain, layout)
    label = domain.block_index("y")
    for t, (j, a, l) in enumerate(layout.tables):
        expected = np.zeros(layout.offsets[t + 1] - layout.offsets[t], dtype=np.int64)
        for row in range(len(codes)):
            expected[codes[row, a] * 2 + codes[row, label]] += int(math.floor(numerics[row, j] * TIE_QUANTUM + 0.5))
        assert np.array_equal(sums[layout.offsets[t]:layout.offsets[t + 1]], expected)


def test_replacing_one_row_moves_the_sums_within_the_stated_sensitivity_and_can_reach_it() -> None:
    """Squared L2 change of the integer sums over 2,000 random replacements <= 2 T Q^2, with
    equality for a row of value 1 everywhere replaced by one of value 1 in other cells."""
    domain = _domain(nullable=False)
    layout = tie_layout(domain)
    rng = np.random.default_rng(1)
    codes, numerics = _rows(domain, 50, rng)
    worst = worst_replacement(codes, numerics, domain, layout, lambda n, g: _rows(domain, n, g), rng)
    assert worst <= layout.l2_sensitivity_squared
    codes[0], numerics[0] = [0, 0, 0], [1.0, 1.0]
    moved_codes, moved_numerics = codes.copy(), numerics.copy()
    moved_codes[0] = [1, 1, 0]  # other sex and edu, same label: every table's cell changes
    change = tie_sums(moved_codes, moved_numerics, domain, layout) - tie_sums(codes, numerics, domain, layout)
    assert int(change @ change) == layout.l2_sensitivity_squared


def test_release_charges_its_rho_once_and_adds_noise_of_the_stated_std() -> None:
    domain = _domain()
    layout = tie_layout(domain)
    n_rows, rho, calls = 500, 0.02, 300
    ledger = PrivacyLedger(calls * rho * 1.5)
    rng = np.random.default_rng(2)
    sums = tie_sums(*_rows(domain, n_rows, rng), domain, layout)
    noise = []
    for call in range(calls):
        noisy, std = release_ties(sums, n_rows, layout, rho, ledger, rng)
        assert len(ledger.events) == call + 1 and ledger.events[-1].rho == rho
        assert ledger.events[-1].mechanism == "gaussian"
        noise.append(noisy - sums / (n_rows * TIE_QUANTUM))
    # sqrt(2 T) / n / sqrt(2 rho), written out: T = 5 tables
    assert std == math.sqrt(2.0 * 5) / n_rows / math.sqrt(2.0 * rho)
    flat = np.concatenate(noise)
    counts = flat * n_rows * TIE_QUANTUM
    assert np.allclose(counts, np.rint(counts), atol=1e-6)  # integer noise on integer sums
    statistic = (flat.size - 1) * flat.var(ddof=1) / std**2
    low, high = stats.chi2.ppf([1e-5, 1 - 1e-5], flat.size - 1)
    assert low <= statistic <= high
    assert isinstance(ledger.events[0], PrivacyEvent)


def _tied_rows(domain: Domain, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Rows whose age rises with edu (0.2 per level) within each label; hours independent."""
    codes, numerics = _rows(domain, n, rng)
    edu = codes[:, domain.block_index("edu")]
    numerics[:, 0] = np.clip(0.3 + 0.2 * edu + 0.05 * rng.standard_normal(n), 0.0, 1.0)
    return codes, numerics


def _cell_means(codes, values, domain, block) -> np.ndarray:
    label = codes[:, domain.block_index("y")]
    cells = codes[:, block] * 2 + label
    size = domain.blocks[block].n_codes * 2
    return np.bincount(cells, weights=values, minlength=size) / np.bincount(cells, minlength=size)


def test_fit_recovers_clear_ties_and_shrinks_ties_the_noise_hides() -> None:
    domain = _domain()
    layout = tie_layout(domain)
    codes, numerics = _tied_rows(domain, 4_000, np.random.default_rng(3))
    relaxed = one_hot_relaxed(domain, codes, numerics)
    exact = tie_sums(codes, numerics, domain, layout) / (len(codes) * TIE_QUANTUM)
    precise = fit_ties(relaxed, domain, layout, exact, 1e-6)
    table = [t for t, (j, a, _) in enumerate(layout.tables) if j == 0 and a == domain.block_index("edu")][0]
    fitted = precise.deviations[layout.offsets[table]:layout.offsets[table + 1]].reshape(3, 2)
    label = codes[:, domain.block_index("y")]
    truth = _cell_means(codes, numerics[:, 0], domain, domain.block_index("edu")).reshape(3, 2) - np.array(
        [numerics[label == c, 0].mean() for c in range(2)])
    assert np.abs(fitted - truth).max() < 0.01  # the ridge's prior (at most the label's spread) barely shrinks
    released = exact + np.random.default_rng(4).normal(0, 0.5, exact.shape)  # noise far above every tie
    unshrunk = fit_ties(relaxed, domain, layout, released, 1e-9)
    shrunk = fit_ties(relaxed, domain, layout, released, 0.5)
    assert np.abs(unshrunk.deviations).max() > 1.0 and np.abs(shrunk.deviations).max() < 0.1


def _ties_and_decoupled_rows(domain, n_rows: int, rng):
    """(ties fitted to exact sums of tied rows, codes, the rows' numerics, the numerics permuted
    within each label as the label coupling leaves them, the label codes)."""
    layout = tie_layout(domain)
    codes, numerics = _tied_rows(domain, n_rows, rng)
    ties = fit_ties(one_hot_relaxed(domain, codes, numerics), domain, layout,
                    tie_sums(codes, numerics, domain, layout) / (len(codes) * TIE_QUANTUM), 1e-6)
    label = codes[:, domain.block_index("y")]
    shuffled = numerics.copy()
    for c in range(2):  # the label coupling: ties broken
        rows = np.flatnonzero(label == c)
        shuffled[rows] = shuffled[rng.permutation(rows)]
    return ties, codes, numerics, shuffled, label


def test_decoding_follows_the_ties_and_keeps_each_labels_values() -> None:
    domain = _domain()
    ties, codes, numerics, shuffled, label = _ties_and_decoupled_rows(domain, 4_000, np.random.default_rng(5))
    out = ties.apply(codes, shuffled, domain, np.random.default_rng(6))
    null = codes[:, domain.block_index("hours", indicator=True)] == 1
    for c in range(2):
        assert np.array_equal(np.sort(out[label == c, 0]), np.sort(shuffled[label == c, 0]))
        live = (label == c) & ~null
        assert np.array_equal(np.sort(out[live, 1]), np.sort(shuffled[live, 1]))
    assert np.array_equal(out[null, 1], shuffled[null, 1])
    edu = domain.block_index("edu")
    before = np.abs(_cell_means(codes, shuffled[:, 0], domain, edu) - _cell_means(codes, numerics[:, 0], domain, edu))
    after = np.abs(_cell_means(codes, out[:, 0], domain, edu) - _cell_means(codes, numerics[:, 0], domain, edu))
    assert before.max() > 0.15 and after.max() < 0.02


def test_tables_stepping_together_in_one_block_still_follow_the_ties(monkeypatch) -> None:
    """A wide column's tables step in blocks from one assignment (BACKFIT_BLOCKS): with every
    table of a column in one block the decoded rows still meet the ties and keep each label's
    values."""
    from polars_rap.decode import numeric_ties

    monkeypatch.setattr(numeric_ties, "BACKFIT_BLOCKS", 1)
    domain = _domain()
    ties, codes, numerics, shuffled, label = _ties_and_decoupled_rows(domain, 4_000, np.random.default_rng(5))
    out = ties.apply(codes, shuffled, domain, np.random.default_rng(6))
    for c in range(2):
        assert np.array_equal(np.sort(out[label == c, 0]), np.sort(shuffled[label == c, 0]))
    for block in ("edu", "sex"):
        b = domain.block_index(block)
        truth = _cell_means(codes, numerics[:, 0], domain, b)
        assert np.abs(_cell_means(codes, out[:, 0], domain, b) - truth).max() < 0.03


def test_later_chunks_reuse_the_first_chunks_scores_and_still_follow_the_ties(monkeypatch) -> None:
    domain = _domain()
    ties, codes, numerics, shuffled, label = _ties_and_decoupled_rows(domain, 8_000, np.random.default_rng(9))
    first, second = slice(0, 4_000), slice(4_000, 8_000)
    scores = TieScores()
    alone = ties.apply(codes[first], shuffled[first], domain, np.random.default_rng(10))
    kept = ties.apply(codes[first], shuffled[first], domain, np.random.default_rng(10), scores)
    assert np.array_equal(kept, alone)  # the first chunk decodes as without reuse
    assert sorted(scores.by_column) == [0, 1]
    fitted = {j: [beta.copy() for beta in betas] for j, betas in scores.by_column.items()}
    backfits = []
    original = NumericTies._backfit
    monkeypatch.setattr(NumericTies, "_backfit", lambda self, *a: backfits.append(1) or original(self, *a))
    out = ties.apply(codes[second], shuffled[second], domain, np.random.default_rng(11), scores)
    assert not backfits  # one assignment a column, no backfit
    assert all(np.array_equal(a, b) for j in fitted for a, b in zip(fitted[j], scores.by_column[j], strict=True))
    codes_2, shuffled_2, truth_2 = codes[second], shuffled[second], numerics[second]
    label_2 = label[second]
    for c in range(2):
        assert np.array_equal(np.sort(out[label_2 == c, 0]), np.sort(shuffled_2[label_2 == c, 0]))
    edu = domain.block_index("edu")
    truth = _cell_means(codes_2, truth_2[:, 0], domain, edu)
    before = np.abs(_cell_means(codes_2, shuffled_2[:, 0], domain, edu) - truth)
    after = np.abs(_cell_means(codes_2, out[:, 0], domain, edu) - truth)
    assert before.max() > 0.15 and after.max() < 0.03


def test_the_score_kernel_equals_the_per_table_cell_sum_bit_for_bit() -> None:
    """The latent scores of decoding (:func:`~polars_rap.kernels.cpu_sampling.tie_scores`) equal
    ``noise + sum(beta[cell])`` over the per-table cells (:meth:`NumericTies._cells`) to the bit,
    on tables whose features include an earlier numeric column's bins with nulls, values at 0, 1
    and outside [0, 1]."""
    domain = Domain.from_mapping(  # the nullable column first, so that the second's tables read its bins
        {"hours": pl.Float64, "sex": pl.String, "age": pl.Float64, "y": pl.String},
        {"hours": {"bounds": (0.0, 1.0), "nullable": True}, "sex": ["F", "M"], "age": (0.0, 1.0), "y": ["n", "p"]},
        labels=["y"])
    layout = tie_layout(domain, bins=8)
    rng = np.random.default_rng(12)
    codes, numerics = _rows(domain, 3_000, rng)
    numerics[:4, 0] = [0.0, 1.0, -0.25, 1.5]
    ties = NumericTies(layout, np.zeros(layout.n_cells))
    for j in range(2):
        tables = [t for t, (column, _, _) in enumerate(layout.tables) if column == j]
        assert j == 0 or any(a >= len(domain.blocks) for _, a, _ in (layout.tables[t] for t in tables))
        rows = np.flatnonzero(rng.random(len(codes)) < 0.7)
        betas = [rng.normal(0, 1, layout.offsets[t + 1] - layout.offsets[t]) for t in tables]
        noise = rng.standard_normal(len(rows))
        cells = ties._cells(codes, numerics, rows, domain, tables)
        expected = noise + sum(beta[cell] for beta, cell in zip(betas, cells, strict=True))
        assert np.array_equal(ties._scores(codes, numerics, rows, domain, tables, betas, noise), expected)


def test_the_backfit_step_kernel_equals_the_bincount_form_bit_for_bit() -> None:
    """:func:`~polars_rap.kernels.cpu_sampling.backfit_step` against the NumPy form it replaced:
    per table, the cells' means of the assignment by ``np.bincount``, steps ``STEP (target -
    mean) / spread`` (0 in an empty cell), then ``beta += step`` and ``score += step[cells]``
    table by table; tables of unequal sizes, empty cells, two blocks in turn."""
    from polars_rap.kernels.cpu_sampling import backfit_step

    rng = np.random.default_rng(13)
    sizes = [4, 9, 2, 30]
    n = 5_000
    cells = np.stack([rng.integers(0, size - (size > 4), n) for size in sizes])  # the last cell of some tables empty
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    counts = np.concatenate([np.bincount(cell, minlength=size) for cell, size in zip(cells, sizes, strict=True)])
    targets = rng.normal(0, 1, offsets[-1])
    beta, score = np.zeros(offsets[-1]), rng.standard_normal(n)
    betas, expected_score = [np.zeros(size) for size in sizes], score.copy()
    for block in (np.array([0, 1]), np.array([2, 3])):
        current = rng.random(n)
        steps = []
        for i in block:
            count = np.bincount(cells[i], minlength=sizes[i])
            mean = np.bincount(cells[i], weights=current, minlength=sizes[i]) / np.maximum(count, 1)
            target = targets[offsets[i]:offsets[i + 1]]
            steps.append(np.where(count > 0, 1.5 * (target - mean) / 0.3, 0.0))
        for i, step in zip(block, steps, strict=True):
            betas[i] += step
            expected_score += step[cells[i]]
        backfit_step(cells, block, offsets, counts, current, targets, beta, 1.5, 0.3, score)
    assert np.array_equal(beta, np.concatenate(betas)) and np.array_equal(score, expected_score)
    assert np.count_nonzero(beta == 0.0) == 2  # the two empty cells (tables of 9 and 30) never step


def test_ties_round_trip_through_a_frame_and_refuse_another_domain() -> None:
    domain = _domain()
    layout = tie_layout(domain)
    ties = NumericTies(layout, np.random.default_rng(7).normal(size=layout.n_cells))
    back = NumericTies.from_frame(ties.to_frame(domain), domain)
    assert np.array_equal(back.deviations, ties.deviations)
    with pytest.raises(ValueError, match="do not match"):
        NumericTies.from_frame(ties.to_frame(domain), _domain(nullable=False))


@pytest.fixture(scope="module")
def frame() -> tuple[pl.DataFrame, dict]:
    rng = np.random.default_rng(8)
    n = 2_000
    edu = rng.choice(["a", "b", "c"], n)
    age = np.clip(30 + 12 * (edu == "c") + rng.normal(0, 6, n), 18, 90).round().astype(np.int64)
    y = np.where(age + rng.normal(0, 6, n) > 40, "p", "n")
    data = pl.DataFrame({"sex": rng.choice(["F", "M"], n), "edu": edu, "age": age, "y": y})
    return data, {"sex": ["F", "M"], "edu": ["a", "b", "c"], "age": (18, 90), "y": ["n", "p"]}


SMALL = dict(relaxed_rows=40, workload={"n_linear_thresholds": 100})
"""The fits' small loop (strategy settings)."""


def _fit(frame, share: float, numeric_coupling: str = "label", **keywords):
    data, domain = frame
    strategy = PlannedStrategy(tie_share=share, numeric_coupling=numeric_coupling, **SMALL)
    return polars_rap.synthesize(data, epsilon=2.0, delta=1e-7, domain=domain, labels=["y"], seed=0, progress=False,
                                 strategy=strategy, **keywords)


def test_synthesize_charges_the_ties_once_before_the_loop_and_saves_them(frame, tmp_path) -> None:
    result = _fit(frame, 0.2)
    events = [e for e in result.report.events if e.description.startswith("numeric ties")]
    assert len(events) == 1 and result.numeric_ties is not None
    before = result.report.events[:result.report.events.index(events[0])]
    remaining = result.report.rho_budget - math.fsum(e.rho for e in before)
    assert events[0].rho == 0.2 * remaining
    assert result.report.rho_spent <= result.report.rho_budget
    assert result.report.parameters["strategy"]["tie_share"] == 0.2
    result.model.save(tmp_path / "model")
    loaded = polars_rap.load(tmp_path / "model")
    assert np.array_equal(loaded.numeric_ties.deviations, result.numeric_ties.deviations)
    assert loaded.sample(300, seed=1).equals(result.model.sample(300, seed=1))
    off = _fit(frame, 0.0)
    assert off.numeric_ties is None and not any(e.description.startswith("numeric ties") for e in off.report.events)


def test_a_decoding_backfits_once_whatever_its_chunks(frame, monkeypatch) -> None:
    from polars_rap.decode import decoding

    model = _fit(frame, 0.2).model
    backfits = []
    original = NumericTies._backfit
    monkeypatch.setattr(NumericTies, "_backfit", lambda self, *a: backfits.append(1) or original(self, *a))
    monkeypatch.setattr(decoding, "_DECODE_CHUNK_ROWS", 250)
    sample = model.sample(1_000, seed=2)
    assert len(backfits) == 1  # age: its first chunk fits, the three others reuse
    assert sample.height == 1_000 and sample.equals(model.sample(1_000, seed=2))


def test_bad_tie_settings_are_parameter_errors() -> None:
    with pytest.raises(ParameterError, match="tie_share must be"):
        PlannedStrategy(tie_share=1.0)


def test_without_labels_or_the_label_coupling_a_tie_share_releases_nothing(frame) -> None:
    fitted = _fit(frame, 0.2, numeric_coupling="fitted")
    assert fitted.numeric_ties is None
    assert not any(e.description.startswith("numeric ties") for e in fitted.report.events)
    data, domain = frame
    result = polars_rap.synthesize(data.drop("y"), epsilon=2.0, delta=1e-7,
                                   domain={k: v for k, v in domain.items() if k != "y"}, seed=0, progress=False,
                                   strategy=PlannedStrategy(tie_share=0.2, **SMALL))
    assert result.numeric_ties is None
    assert not any(e.description.startswith("numeric ties") for e in result.report.events)


def test_ties_noisier_than_the_cap_are_not_measured_and_change_nothing(frame, monkeypatch) -> None:
    """Above ``TIE_NOISE_CAP`` (here set to 1e-6) nothing is charged and the run is the run
    without ties, row for row: the ties' noise has a stream of its own, so the loop's draws are
    the same."""
    from polars_rap.decode.numeric_ties import TIE_NOISE_CAP
    from polars_rap.pipeline import fitting

    assert TIE_NOISE_CAP == 0.01
    monkeypatch.setattr(fitting, "TIE_NOISE_CAP", 1e-6)
    capped = _fit(frame, 0.2)
    off = _fit(frame, 0.0)
    assert capped.numeric_ties is None
    assert capped.report.events == off.report.events and capped.data.equals(off.data)


def test_the_stated_noise_std_is_the_releases() -> None:
    domain = _domain()
    layout = tie_layout(domain)
    ledger = PrivacyLedger(1.0)
    _, std = release_ties(np.zeros(layout.n_cells, dtype=np.int64), 700, layout, 0.03, ledger,
                          np.random.default_rng(0))
    assert tie_noise_std(layout, 700, 0.03) == std
