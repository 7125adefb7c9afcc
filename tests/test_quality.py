"""The quality report: distances against hand-computed values, streaming, HTML and figures."""

import base64
import math
import sys
from html.parser import HTMLParser

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.quality import quality_report
from polars_rap.quality.ml_utility import ML_MODELS
from polars_rap.quality.report import QualityReport

SMALL_WORKLOAD = {"n_mixed_marginals": 20, "n_linear_thresholds": 50}


def tiny_tables():
    """Four rows each, every distance computable by hand."""
    real = pl.DataFrame({"a": ["x", "x", "y", "y"], "b": ["p", "p", "q", "q"],
                         "u": [1.0, 2.0, 3.0, 4.0], "v": [2.0, 4.0, 6.0, None]})
    synthetic = pl.DataFrame({"a": ["x", "x", "x", "y"], "b": ["p", "q", "p", "q"],
                              "u": [1.0, 1.0, 2.0, 2.0], "v": [2.0, None, None, 8.0]})
    domain = {"a": ["x", "y"], "b": ["p", "q"], "u": (0.0, 10.0), "v": {"bounds": (0.0, 10.0), "nullable": True}}
    return real, synthetic, domain


def pair(report: QualityReport, a: str, b: str) -> dict:
    return report.pairs.filter((pl.col("column_a") == a) & (pl.col("column_b") == b)).row(0, named=True)


def test_distances_match_hand_computed_values():
    real, synthetic, domain = tiny_tables()
    report = quality_report(real, synthetic, domain=domain)
    distance = dict(report.columns.select("column", "distance").iter_rows())
    # a: real (1/2, 1/2), synthetic (3/4, 1/4): TV = (1/4 + 1/4) / 2.
    assert distance["a"] == pytest.approx(0.25)
    assert distance["b"] == pytest.approx(0.0)
    # u: F_real(2) = 1/2, F_synthetic(2) = 1; no larger gap anywhere.
    assert distance["u"] == pytest.approx(0.5)
    # v, non-null values: real {2, 4, 6}, synthetic {2, 8}; at 6: 1 against 1/2.
    assert distance["v"] == pytest.approx(0.5)
    nulls = report.columns.filter(pl.col("column") == "v").row(0, named=True)
    assert nulls["real_null_rate"] == pytest.approx(0.25) and nulls["synthetic_null_rate"] == pytest.approx(0.5)
    # Cramer's V of a and b: real perfectly associated (1); synthetic table [[2, 1], [0, 1]]
    # has chi2 = 4/3 over n = 4, so V = sqrt(1/3).
    ab = pair(report, "a", "b")
    assert ab["measure"] == "Cramer's V" and ab["real"] == pytest.approx(1.0)
    assert ab["synthetic"] == pytest.approx(math.sqrt(1 / 3))
    # Correlation ratio of u given a, real: group means 1.5 and 3.5 around 2.5, so
    # SS_between = 4 of SS_total = 5.
    au = pair(report, "a", "u")
    assert au["measure"] == "correlation ratio" and au["real"] == pytest.approx(math.sqrt(4 / 5))
    # synthetic: mean 1.5; groups x {1, 1, 2} (mean 4/3), y {2}: SS_between = 3 (1/6)^2 + (1/2)^2 = 1/3,
    # SS_total = 4 (1/2)^2 = 1.
    assert au["synthetic"] == pytest.approx(math.sqrt(1 / 3))
    # Pearson over pairwise non-null rows: real u, v on three rows, exactly linear (r = 1);
    # synthetic on two rows (1, 2) and (2, 8): r = 1.
    uv = pair(report, "u", "v")
    assert uv["measure"] == "Pearson" and uv["real"] == pytest.approx(1.0) and uv["synthetic"] == pytest.approx(1.0)
    assert report.pairs.get_column("change").to_list() == sorted(report.pairs.get_column("change"), reverse=True)


def test_identical_tables_give_zero_distances_and_errors():
    rng = np.random.default_rng(0)
    frame = pl.DataFrame({"c": rng.choice(["a", "b", "c"], 300).tolist(), "y": rng.choice(["0", "1"], 300).tolist(),
                          "x": rng.normal(5, 2, 300).clip(0, 10), "k": rng.integers(0, 50, 300)})
    domain = {"c": ["a", "b", "c"], "y": ["0", "1"], "x": (0.0, 10.0), "k": (0, 49)}
    report = quality_report(frame, frame.sample(fraction=1.0, shuffle=True, seed=1), domain=domain,
                                       labels=["y"], **SMALL_WORKLOAD)
    assert report.columns.get_column("distance").to_list() == [0.0] * 4
    assert report.pairs.get_column("change").max() == pytest.approx(0.0, abs=1e-12)
    assert report.workload.get_column("max_error").max() == 0.0


def test_ks_distance_equals_scipy_and_does_not_depend_on_batching(tmp_path):
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(1)
    real = pl.DataFrame({"x": np.round(rng.normal(0, 1, 2000), 1), "c": rng.choice(["a", "b"], 2000).tolist()})
    synthetic = pl.DataFrame({"x": np.round(rng.normal(0.1, 1.2, 700), 1), "c": rng.choice(["a", "b"], 700).tolist()})
    domain = {"x": (-10.0, 10.0), "c": ["a", "b"]}
    whole = quality_report(real, synthetic, domain=domain)
    expected = stats.ks_2samp(real["x"].to_numpy(), synthetic["x"].to_numpy()).statistic
    assert whole.columns.filter(pl.col("column") == "x")["distance"][0] == pytest.approx(expected, abs=1e-12)
    real.write_parquet(tmp_path / "real.parquet")
    batched = quality_report(str(tmp_path / "real.parquet"), synthetic, domain=domain, batch_rows=97)
    assert batched.columns.equals(whole.columns)
    assert np.allclose(batched.pairs["change"].to_numpy(), whole.pairs["change"].to_numpy(), atol=1e-12)
    assert batched.names["real"] == "real.parquet"  # a file's name, never its path


def test_workload_errors_do_not_depend_on_how_the_answers_are_chunked(monkeypatch):
    """The real rows' workload answers are counted over chunks of encoded batches
    (ANSWER_CHUNK_ROWS); any chunking, down to one batch of 97 rows per call, gives the same
    errors to the bit."""
    from polars_rap.quality import stats as quality_stats

    task = polars_rap.io.datasets.load_task("acs-income-CA")
    real, synthetic = task.frame.head(1_500), task.frame.slice(1_500, 400)
    options = dict(domain=task.domain, labels=task.labels, n_mixed_marginals=50, n_linear_thresholds=300,
                   batch_rows=97, backend="cpu")
    together = quality_report(real, synthetic, **options)
    monkeypatch.setattr(quality_stats, "ANSWER_CHUNK_ROWS", 1)
    one_by_one = quality_report(real, synthetic, **options)
    assert together.workload_errors.equals(one_by_one.workload_errors)


def test_mismatched_schemas_name_the_columns():
    real, synthetic, domain = tiny_tables()
    with pytest.raises(ValueError, match=r"only in the real table \['v'\], only in the synthetic table \['w'\]"):
        quality_report(real, synthetic.rename({"v": "w"}), domain=domain)
    with pytest.raises(ValueError, match=r"u \(real Float64, synthetic String\)"):
        quality_report(real, synthetic.with_columns(pl.col("u").cast(pl.String)), domain=domain)


def test_test_rows_without_labels_are_refused():
    real, synthetic, domain = tiny_tables()
    with pytest.raises(ValueError, match=r"needs a label column: pass labels="):
        quality_report(real, synthetic, domain=domain, test=real)


@pytest.fixture(scope="module")
def synthesized():
    """A tiny synthesis with a label, its real rows and held-out test rows."""
    rng = np.random.default_rng(2)
    frame = pl.DataFrame({"age": rng.integers(18, 90, 400), "sex": rng.choice(["F", "M"], 400).tolist(),
                          "hours": np.round(rng.uniform(1, 99, 400), 1)})
    frame = frame.with_columns(income=pl.when(pl.col("hours") > 40).then(pl.lit(">50K")).otherwise(pl.lit("<=50K")))
    domain = {"age": (18, 90), "sex": ["F", "M"], "hours": (1.0, 99.0), "income": ["<=50K", ">50K"]}
    result = polars_rap.synthesize(frame[:300], epsilon=1.0, delta=1e-6, domain=domain, labels=["income"],
                                   seed=0, progress=False, strategy=polars_rap.PlannedStrategy(
                                       relaxed_rows=20, rounds={"LT": 2}, workload={"n_linear_thresholds": 20}))
    return frame[:300], frame[300:], result


class _Page(HTMLParser):
    """Every image source, and every other attribute value and text, of a page."""

    def __init__(self):
        super().__init__()
        self.images, self.other, self.tags = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            (self.images if (tag, name) == ("img", "src") else self.other).append(value or "")

    def handle_data(self, data):
        self.other.append(data)


def test_html_is_self_contained_with_one_figure_per_column_and_the_heatmap(synthesized, tmp_path):
    real, test, result = synthesized
    report = quality_report(real, result, test=test, **SMALL_WORKLOAD)
    path = report.to_html(tmp_path / "report.html")
    text = path.read_text(encoding="utf-8")
    page = _Page()
    page.feed(text)
    page.close()
    alts = [value for value in page.other if value.endswith(": real and synthetic distribution")]
    assert sorted(alts) == sorted(f"{name}: real and synthetic distribution" for name in real.columns)
    assert any("heatmap of the change in association" in value for value in page.other)
    # The overview, four columns, the heatmap and the workload errors; every image an
    # embedded, non-empty PNG.
    assert any("per-column distance" in value for value in page.other)
    assert len(page.images) == 1 + len(real.columns) + 2
    for source in page.images:
        assert source.startswith("data:image/png;base64,")
        png = base64.b64decode(source.split(",", 1)[1])
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000
    everything_else = "\n".join(page.other) + "\n".join(page.tags)
    without_images = text
    for source in page.images:
        without_images = without_images.replace(source, "")
    for forbidden in ("http", "//", str(tmp_path), "<script", "<link", "@import", "url("):
        assert forbidden not in without_images
    assert "Not private" in everything_else and "What was released (private)" in everything_else
    # The note comes first, before the privacy part and every figure.
    assert text.index("Not private") < text.index("What was released") < text.index("<img")
    assert "Machine-learning utility" in text and report.ml_utility.height == 6
    assert report.ml_utility.select("model", "trained_on").rows() == [
        (model, trained_on) for model in ML_MODELS for trained_on in ("synthetic", "real")]
    assert "gradient boosting" in text and "random forest" in text
    assert report.privacy is result.report and report.n_synthetic == result.data.height


def test_both_reference_classifiers_train_on_at_most_ml_rows_uniform_rows(synthesized, tmp_path):
    """``ml_rows`` caps the training rows of the "real" classifier (a uniform sample kept while
    the real table streams) and of the "synthetic" one alike, so they compare at one size."""
    real, test, result = synthesized
    path = tmp_path / "real.parquet"
    real.write_parquet(path)
    report = quality_report(path, result, test=test, ml_rows=120, batch_rows=50, **SMALL_WORKLOAD)
    n_train = dict(report.ml_utility.select("trained_on", "n_train").iter_rows())
    assert n_train == {"real": 120, "synthetic": 120}
    whole = quality_report(real, result, test=test, **SMALL_WORKLOAD)
    assert dict(whole.ml_utility.select("trained_on", "n_train").iter_rows()) == {
        "real": real.height, "synthetic": result.data.height}
    with pytest.raises(polars_rap.ParameterError, match=r"The 'ml_rows' parameter must be an int in \[1, inf\)"):
        quality_report(real, result, test=test, ml_rows=0)


def test_ml_models_picks_the_classifiers_in_a_fixed_order(synthesized):
    """``ml_models`` trains only the classifiers asked for, listed in ML_MODELS order; an
    unknown name is refused before any work, naming the three."""
    real, test, result = synthesized
    report = quality_report(real, result, test=test, ml_models=["random_forest", "logistic"], **SMALL_WORKLOAD)
    assert report.ml_utility.select("model", "trained_on").rows() == [
        ("logistic", "synthetic"), ("logistic", "real"), ("random_forest", "synthetic"), ("random_forest", "real")]
    logistic = quality_report(real, result, test=test, ml_models=["logistic"], **SMALL_WORKLOAD)
    assert logistic.ml_utility.drop("model").equals(report.ml_utility.filter(pl.col("model") == "logistic").drop("model"))
    with pytest.raises(polars_rap.ParameterError, match="'gradient_boosting', 'random_forest'. Got \\['svm'\\]"):
        quality_report(real, result, test=test, ml_models=["svm"])


def test_figures_are_non_empty_matplotlib_figures(synthesized):
    real, _, result = synthesized
    report = quality_report(real, result, **SMALL_WORKLOAD)
    figures = report.figures()
    assert set(figures) == {f"column: {name}" for name in real.columns} | {"overview", "pairs", "workload"}
    for name, figure in figures.items():
        assert figure.axes and any(axes.has_data() for axes in figure.axes), name


def test_saved_model_gives_rows_domain_and_privacy_summary(synthesized, tmp_path):
    real, _, result = synthesized
    result.save(tmp_path / "model")
    report = quality_report(real, str(tmp_path / "model"), **SMALL_WORKLOAD)
    assert report.privacy.epsilon == 1.0 and report.n_synthetic == result.report.n_rows
    plain = quality_report(real, result.data, domain=result.domain, model=tmp_path / "model",
                                      **SMALL_WORKLOAD)
    assert plain.privacy.rho_spent == result.report.rho_spent


def test_notebook_views_are_short_fragments(synthesized):
    real, _, result = synthesized
    report = quality_report(real, result.data, domain=result.domain, **SMALL_WORKLOAD)
    assert report.privacy is None and report.ml_utility is None
    assert len(repr(report)) < 200 and "not private" in repr(report)
    fragment = report._repr_html_()
    assert fragment.startswith("<div>") and "<html" not in fragment and "No privacy report" in fragment
    assert report.summary()["distance"].is_sorted(descending=True)


def test_missing_matplotlib_names_the_extra(synthesized, monkeypatch):
    real, _, result = synthesized
    report = quality_report(real, result.data, domain=result.domain, **SMALL_WORKLOAD)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    with pytest.raises(ImportError, match=r"polars-rap\[report\]"):
        report.figures()
