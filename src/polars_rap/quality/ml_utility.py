"""ML utility: a classifier trained on one table (e.g. synthetic), macro F1 on another (real).

The benchmark's and the quality report's machine-learning figure (paper App. B, Def. 14):
logistic regression, gradient boosting or a random forest (:data:`ML_MODELS`) trained on the
rows of one table and scored on held-out real rows, all three on the same fixed features.
It reads real data (the caller's held-out rows), so its results are not private releases
(design.md §5). :mod:`polars_rap.quality.evaluation` re-exports these names.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from polars_rap.errors import DataError, ParameterError
from polars_rap.schema.domain import Domain
from polars_rap.schema.temporal import is_temporal, to_internal
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score

__all__ = ["ML_MODELS", "ML_ROWS", "ml_utility", "ml_utility_for_domain"]

ML_MODELS = ("logistic", "gradient_boosting", "random_forest")
"""The classifiers :func:`ml_utility` trains: scikit-learn's ``LogisticRegression``,
``HistGradientBoostingClassifier`` and ``RandomForestClassifier``."""

ML_ROWS = 200_000
"""Default training rows of each reference classifier (a uniform sample of larger tables)."""

_MAX_ITER = 10_000


def ml_utility(
    train: pl.DataFrame,
    test: pl.DataFrame,
    label: str,
    categorical: Sequence[str],
    numeric: Mapping[str, tuple[float, float]],
    categories: Mapping[str, Sequence[Any]] | None = None,
    seed: int = 0,
    *,
    model: str = "logistic",
) -> dict[str, Any]:
    """Train a classifier on ``train``, score it on ``test`` (paper App. B, Def. 14).

    Features are fixed before fitting, so that a model trained on synthetic rows and one
    trained on real rows see the same columns:

    - each categorical column is one-hot encoded over ``categories[column]`` when given (a
      ``None`` entry makes null its own indicator; values outside the list encode as all
      zeros), else over the union of the values in ``train`` and ``test``. The union reads
      the test rows, which are the caller's evaluation data, not a private input, so that is
      fine here;
    - each numeric column is scaled by its public bounds ``(lo, hi)`` to ``[0, 1]`` (clipped),
      nulls and NaN imputed as 0, plus a 0/1 null-indicator column (dates and times in days or
      microseconds, the units of their bounds in a :class:`~polars_rap.schema.domain.Domain`).

    Every model sees these same columns (trees do not need the scaling, and it does not
    change their splits). ``model`` picks one of :data:`ML_MODELS`, all from scikit-learn:

    - ``"logistic"``: ``LogisticRegression`` (lbfgs, L2, C=1) with enough iterations to
      converge on these scaled features;
    - ``"gradient_boosting"``: ``HistGradientBoostingClassifier(random_state=seed)``, default
      hyper-parameters (early stopping on a 10 % validation split above 10,000 rows; its
      OpenMP threads use every core);
    - ``"random_forest"``: ``RandomForestClassifier(n_estimators=100, random_state=seed,
      n_jobs=1)``, one core, so that timings on the two-core benchmark machine do not
      depend on what runs beside it.

    On 39,074 Adult training rows (114 features) fitting takes about 0.5 s (logistic), 1.3 s
    (gradient boosting, two cores) and 3 s (random forest, one core); on five times as many,
    about 6 s and 19 s for the last two.

    Parameters
    ----------
    train, test : pl.DataFrame
        Rows to fit on and rows to score on; both need ``label`` and every feature column.
    label : str
        The target column; it must not be listed in ``categorical`` or ``numeric``. Null
        labels are an error.
    categorical : sequence of str
        Categorical feature columns.
    numeric : mapping of str to (float, float)
        Numeric feature columns and their public bounds.
    categories : mapping of str to sequence, optional
        Public category lists for (some of) the categorical columns.
    seed : int, default 0
        ``random_state`` of the model (lbfgs itself is deterministic); the same seed gives
        the same scores.
    model : {"logistic", "gradient_boosting", "random_forest"}, default "logistic"
        The classifier (see above).

    Returns
    -------
    dict
        ``macro_f1`` (float, sklearn ``f1_score(average="macro")``), ``accuracy`` (float),
        ``n_train`` and ``n_test`` (int). When ``train`` holds a single class, the scores are
        those of predicting that class everywhere, and a ``note`` says so.

    Examples
    --------
    >>> frame = pl.DataFrame({"x": [0.0, 0.1, 0.9, 1.0] * 5, "y": [0, 0, 1, 1] * 5})
    >>> scores = ml_utility(frame, frame, "y", categorical=[], numeric={"x": (0.0, 1.0)})
    >>> scores["macro_f1"], scores["n_train"]
    (1.0, 20)
    >>> ml_utility(frame, frame, "y", categorical=[], numeric={"x": (0.0, 1.0)},
    ...            model="random_forest")["macro_f1"]
    1.0

    Raises
    ------
    ParameterError
        When ``model`` is not one of :data:`ML_MODELS`, or the feature lists are invalid.
    DataError
        When a frame has no rows, lacks a column, or a label is null.
    """
    _check_model(model)
    categorical = list(categorical)
    numeric = dict(numeric)
    _check_ml_inputs(train, test, label, categorical, numeric)
    categories = dict(categories or {})
    one_hot_levels = {
        column: list(categories[column]) if column in categories else _union_levels(train, test, column)
        for column in categorical
    }
    x_train = _feature_matrix(train, one_hot_levels, numeric)
    x_test = _feature_matrix(test, one_hot_levels, numeric)
    y_train = _label_array(train, label)
    y_test = _label_array(test, label)

    result: dict[str, Any] = {"n_train": train.height, "n_test": test.height}
    classes = np.unique(y_train)
    if classes.size == 1:
        y_pred = np.full(y_test.shape, classes[0], dtype=y_train.dtype)
        result["note"] = (
            f"train holds a single class ({classes[0]!r}); scores are those of predicting it "
            f"for every test row"
        )
    else:
        classifier = _classifier(model, seed)
        with warnings.catch_warnings(record=True) as caught:
            # Report non-convergence in the result, where a benchmark table keeps it.
            warnings.simplefilter("always", ConvergenceWarning)
            classifier.fit(x_train, y_train)
        if any(issubclass(w.category, ConvergenceWarning) for w in caught):  # lbfgs only
            result["note"] = f"logistic regression did not converge in {_MAX_ITER} iterations"
        y_pred = classifier.predict(x_test)
    result["macro_f1"] = float(f1_score(y_test, y_pred, average="macro", zero_division=0.0))
    result["accuracy"] = float(accuracy_score(y_test, y_pred))
    return {key: result[key] for key in ("macro_f1", "accuracy", "n_train", "n_test", "note") if key in result}


def _check_model(model: str) -> None:
    if model not in ML_MODELS:
        msg = (f"The 'model' parameter must be one of {', '.join(map(repr, ML_MODELS))}. "
               f"Got {model!r}")
        raise ParameterError(msg)


def _classifier(model: str, seed: int):
    """An unfitted scikit-learn classifier for ``model`` (one of :data:`ML_MODELS`)."""
    if model == "gradient_boosting":
        return HistGradientBoostingClassifier(random_state=seed)
    if model == "random_forest":
        return RandomForestClassifier(n_estimators=100, random_state=seed, n_jobs=1)
    return LogisticRegression(solver="lbfgs", max_iter=_MAX_ITER, random_state=seed)


def _check_ml_inputs(
    train: pl.DataFrame,
    test: pl.DataFrame,
    label: str,
    categorical: list[str],
    numeric: dict[str, tuple[float, float]],
) -> None:
    if label in categorical or label in numeric:
        msg = f"label {label!r} is listed as a feature; remove it from 'categorical'/'numeric'"
        raise ParameterError(msg)
    if not categorical and not numeric:
        msg = "ml_utility needs at least one feature column in 'categorical' or 'numeric'"
        raise ParameterError(msg)
    overlap = sorted(set(categorical) & set(numeric))
    if overlap:
        msg = f"columns {overlap} are listed as both categorical and numeric; list each once"
        raise ParameterError(msg)
    for name, frame in (("train", train), ("test", test)):
        if frame.height == 0:
            msg = f"the '{name}' frame has no rows; ml_utility needs at least one"
            raise DataError(msg)
        missing = [c for c in [label, *categorical, *numeric] if c not in frame.columns]
        if missing:
            msg = f"the '{name}' frame lacks columns {missing}"
            raise DataError(msg)
    for column, bounds in numeric.items():
        lower, upper = bounds
        if not float(lower) < float(upper):
            msg = f"numeric column {column!r} needs bounds (lo, hi) with lo < hi. Got {bounds!r}"
            raise ParameterError(msg)


def _as_plain(series: pl.Series) -> pl.Series:
    """Enum/Categorical compare by their string values."""
    if isinstance(series.dtype, pl.Enum | pl.Categorical):
        return series.cast(pl.String)
    return series


def _union_levels(train: pl.DataFrame, test: pl.DataFrame, column: str) -> list[Any]:
    values = pl.concat([_as_plain(train.get_column(column)), _as_plain(test.get_column(column))])
    levels = values.drop_nulls().unique().sort().to_list()
    return [*levels, None] if values.null_count() else levels


def _feature_matrix(
    frame: pl.DataFrame,
    one_hot_levels: Mapping[str, list[Any]],
    numeric: Mapping[str, tuple[float, float]],
) -> np.ndarray:
    """float64[n_rows, n_features]: one-hot blocks, then (scaled value, null flag) pairs."""
    blocks: list[np.ndarray] = []
    for column, levels in one_hot_levels.items():
        values = _as_plain(frame.get_column(column))
        for level in levels:
            indicator = values.is_null() if level is None else values.eq(level).fill_null(False)
            blocks.append(indicator.to_numpy().astype(np.float64))
    for column, (lower, upper) in numeric.items():
        series = frame.get_column(column)
        values = (to_internal(series) if is_temporal(series.dtype) else series.cast(pl.Float64)).fill_nan(None)
        is_missing = values.is_null().to_numpy()
        scaled = ((values - float(lower)) / (float(upper) - float(lower))).clip(0.0, 1.0)
        blocks.append(scaled.fill_null(0.0).to_numpy().astype(np.float64))
        blocks.append(is_missing.astype(np.float64))
    if not blocks:
        return np.zeros((frame.height, 0), dtype=np.float64)
    return np.column_stack(blocks)


def _label_array(frame: pl.DataFrame, label: str) -> np.ndarray:
    values = _as_plain(frame.get_column(label))
    if values.null_count():
        msg = f"label column {label!r} holds {values.null_count()} null(s); ml_utility needs a label on every row"
        raise DataError(msg)
    return values.to_numpy()


def ml_utility_for_domain(
    train: pl.DataFrame, test: pl.DataFrame, label: str, domain: Domain, seed: int = 0,
    *, model: str = "logistic",
) -> dict:
    """:func:`ml_utility` with features, categories and bounds taken from ``domain``: every
    column except the labels is a feature. ``model`` is one of :data:`ML_MODELS`."""
    features = [c for c in domain.columns if c.name not in domain.labels]
    return ml_utility(
        train, test, label,
        categorical=[c.name for c in features if c.is_categorical],
        numeric={c.name: (c.lower, c.upper) for c in features if not c.is_categorical},
        categories={c.name: list(c.categories) for c in features if c.is_categorical},
        seed=seed, model=model,
    )
