"""Tests for polars_rap.quality.ml_utility (train on one table, score on another), also
reached by its old name polars_rap.quality.evaluation.ml_utility."""

from __future__ import annotations


import numpy as np
import polars as pl
import pytest

from polars_rap.io.datasets import TaskData, load_task, train_test_split
from polars_rap.errors import ParameterError
from polars_rap.quality import evaluation
from polars_rap.quality.ml_utility import ML_MODELS, ml_utility

def _signal_frame(n_rows: int, seed: int) -> pl.DataFrame:
    """A hand-made table whose label is a clear linear function of x and colour."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 100.0, n_rows)
    colour = rng.choice(["red", "green", "blue"], n_rows)
    shift = np.select([colour == "red", colour == "blue"], [15.0, -15.0], 0.0)
    label = (x + shift) > 50.0
    noise = rng.integers(0, 5, n_rows)
    return pl.DataFrame({"x": x, "colour": colour, "noise": noise, "label": label})


def _task_features(data: TaskData) -> tuple[list[str], dict[str, tuple[float, float]], dict]:
    label = data.labels[0]
    categorical = [c for c, t in data.columns_spec.items() if t["kind"] == "categorical" and c != label]
    numeric = {c: tuple(t["bounds"]) for c, t in data.columns_spec.items() if t["kind"] == "numeric"}
    return categorical, numeric, {c: data.domain[c] for c in categorical}


def test_clear_linear_signal_is_learned():
    train, test = _signal_frame(2_000, seed=1), _signal_frame(500, seed=2)
    scores = ml_utility(train, test, "label", categorical=["colour", "noise"], numeric={"x": (0.0, 100.0)})
    assert scores["macro_f1"] > 0.9
    assert scores["accuracy"] > 0.9
    assert (scores["n_train"], scores["n_test"]) == (2_000, 500)
    assert "note" not in scores


def test_same_inputs_same_scores():
    train, test = _signal_frame(500, seed=3), _signal_frame(200, seed=4)
    kwargs = dict(categorical=["colour"], numeric={"x": (0.0, 100.0)}, seed=0)
    assert ml_utility(train, test, "label", **kwargs) == ml_utility(train, test, "label", **kwargs)


@pytest.mark.parametrize("model", ML_MODELS)
def test_every_model_separates_a_separable_table(model):
    """A label that is a threshold on x (with a wide gap around it) or a colour is learned
    exactly by every model."""
    train, test = (
        frame.filter((pl.col("x") - 50.0).abs() > 20.0)
        .with_columns(label=(pl.col("x") > 50.0) | (pl.col("colour") == "red"))
        for frame in (_signal_frame(2_000, seed=11), _signal_frame(500, seed=12))
    )
    scores = ml_utility(train, test, "label", categorical=["colour"], numeric={"x": (0.0, 100.0)}, model=model)
    assert scores["macro_f1"] == pytest.approx(1.0)
    assert scores["accuracy"] == pytest.approx(1.0)


@pytest.mark.parametrize("model", ML_MODELS)
def test_every_model_is_deterministic_for_a_seed(model):
    """Noisy labels, so that a randomised model could differ between fits: the same seed
    gives the same scores."""
    train, test = _signal_frame(1_000, seed=13), _signal_frame(300, seed=14)
    flip = np.random.default_rng(15).random(train.height) < 0.2
    train = train.with_columns(label=pl.Series(train["label"].to_numpy() ^ flip))
    kwargs = dict(categorical=["colour", "noise"], numeric={"x": (0.0, 100.0)}, seed=7, model=model)
    assert ml_utility(train, test, "label", **kwargs) == ml_utility(train, test, "label", **kwargs)


def test_default_model_is_logistic_and_old_names_still_import():
    train, test = _signal_frame(500, seed=16), _signal_frame(200, seed=17)
    kwargs = dict(categorical=["colour"], numeric={"x": (0.0, 100.0)})
    assert ml_utility(train, test, "label", **kwargs) == ml_utility(train, test, "label", model="logistic", **kwargs)
    assert evaluation.ml_utility is ml_utility and evaluation.ML_MODELS == ML_MODELS


def test_unknown_model_is_refused_naming_the_three():
    frame = _signal_frame(100, seed=18)
    with pytest.raises(ParameterError, match="'logistic', 'gradient_boosting', 'random_forest'. Got 'svm'"):
        ml_utility(frame, frame, "label", categorical=["colour"], numeric={"x": (0.0, 100.0)}, model="svm")


def test_label_among_features_is_refused():
    frame = _signal_frame(100, seed=5)
    with pytest.raises(ValueError, match="label 'label' is listed as a feature"):
        ml_utility(frame, frame, "label", categorical=["label", "colour"], numeric={"x": (0.0, 100.0)})


def test_single_class_train_scores_constant_prediction():
    train = _signal_frame(200, seed=6).with_columns(label=pl.lit(True))
    test = _signal_frame(200, seed=7)
    scores = ml_utility(train, test, "label", categorical=["colour"], numeric={"x": (0.0, 100.0)})
    assert "single class" in scores["note"]
    expected_accuracy = test.get_column("label").mean()
    assert scores["accuracy"] == pytest.approx(expected_accuracy)
    assert 0.0 < scores["macro_f1"] < 0.5  # one class has F1 0, the other < 1


def test_fixed_categories_encode_unseen_values_without_error():
    """With public categories the feature set does not depend on the rows: a category absent
    from train, or a test value outside the list, still encodes (the latter as all zeros)."""
    train = _signal_frame(500, seed=8).filter(pl.col("colour") != "blue")
    test = _signal_frame(200, seed=9).with_columns(
        colour=pl.when(pl.col("x") < 5).then(pl.lit("purple")).otherwise(pl.col("colour"))
    )
    scores = ml_utility(train, test, "label", categorical=["colour"], numeric={"x": (0.0, 100.0)},
                        categories={"colour": ["red", "green", "blue"]})
    assert scores["macro_f1"] > 0.7


def test_numeric_nulls_get_an_indicator():
    """Missingness itself is a feature: a label equal to 'x is null' is learned exactly."""
    rng = np.random.default_rng(10)
    x = rng.uniform(0, 10, 400)
    missing = rng.random(400) < 0.5
    frame = pl.DataFrame({"x": np.where(missing, np.nan, x), "label": missing}).with_columns(
        pl.col("x").fill_nan(None)
    )
    scores = ml_utility(frame, frame, "label", categorical=[], numeric={"x": (0.0, 10.0)})
    assert scores["macro_f1"] == pytest.approx(1.0)


def test_null_categories_are_their_own_level():
    frame = pl.DataFrame({"c": [1, None] * 100, "label": [0, 1] * 100}, schema={"c": pl.Int32, "label": pl.Int64})
    scores = ml_utility(frame, frame, "label", categorical=["c"], numeric={}, categories={"c": [1, 2, None]})
    assert scores["macro_f1"] == pytest.approx(1.0)


def test_acs_income_ca_real_split_is_sane():
    data = load_task("acs-income-CA")
    train, test = train_test_split(data.frame, test_fraction=0.2, seed=0)
    categorical, numeric, categories = _task_features(data)
    scores = ml_utility(train, test, data.labels[0], categorical, numeric, categories=categories)
    assert 0.7 <= scores["macro_f1"] <= 0.85
    assert "note" not in scores


def test_adult_real_split_is_sane():
    data = load_task("adult")  # bundled
    train, test = train_test_split(data.frame, test_fraction=0.2, seed=0)
    categorical, numeric, categories = _task_features(data)
    scores = ml_utility(train, test, data.labels[0], categorical, numeric, categories=categories)
    assert 0.7 <= scores["macro_f1"] <= 0.85
    assert "note" not in scores
