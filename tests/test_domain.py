"""Domain: declarations, validation messages, Arrow round trip."""

import polars as pl
import pytest

from polars_rap.schema.domain import Categorical, Domain, Numeric


SCHEMA = {"age": pl.Int64, "sex": pl.String, "hours": pl.Float64, "y": pl.Boolean}


def test_mapping_forms_give_the_declared_kinds_and_nullability():
    domain = Domain.from_mapping(
        SCHEMA,
        {"age": (17, 90), "sex": ["F", "M", None], "hours": {"bounds": (0, 99), "nullable": True}},
        labels=["y"],
    )
    assert domain["age"].kind == "numeric" and not domain["age"].nullable
    assert domain["sex"].categories == ("F", "M") and domain["sex"].nullable
    assert domain["sex"].n_codes == 3
    assert domain["hours"].nullable
    assert domain["y"].categories == (False, True)  # declared by the Boolean dtype
    # blocks: categorical columns in frame order, then the null indicator of 'hours'
    assert [(b.source, b.indicator, b.n_codes) for b in domain.blocks] == [
        ("sex", False, 3), ("y", False, 2), ("hours", True, 2)]
    assert domain.n_coords == 3 + 2 + 2 + 2


def test_enum_columns_need_no_declaration():
    domain = Domain.from_mapping({"c": pl.Enum(["a", "b"])}, {})
    assert domain["c"].categories == ("a", "b")


def test_column_without_domain_names_the_column_and_the_fix():
    with pytest.raises(ValueError, match=r"'sex'.*no public domain.*domain="):
        Domain.from_mapping(SCHEMA, {"age": (17, 90), "hours": (0, 99)}, labels=["y"])


def test_domain_key_not_in_data_is_an_error():
    with pytest.raises(ValueError, match="not in the data.*'agee'"):
        Domain.from_mapping({"age": pl.Int64}, {"agee": (0, 1)})


def test_label_must_be_categorical():
    with pytest.raises(ValueError, match="label column 'age' must be categorical"):
        Domain.from_mapping({"age": pl.Int64}, {"age": (0, 100)}, labels=["age"])


def test_missing_label_is_an_error():
    with pytest.raises(ValueError, match="labels name columns that are not in the data"):
        Domain.from_mapping({"age": pl.Int64}, {"age": (0, 100)}, labels=["income"])


@pytest.mark.parametrize("bounds", [(5, 5), (10, 1), (0, float("inf")), (float("nan"), 1)])
def test_bad_bounds_are_refused(bounds):
    with pytest.raises(ValueError, match="bounds must be finite with lower < upper"):
        Domain.from_mapping({"x": pl.Float64}, {"x": bounds})


def test_numeric_bounds_on_a_text_column_are_refused():
    with pytest.raises(ValueError, match="declared numeric.*holds String"):
        Domain.from_mapping({"x": pl.String}, {"x": (0, 1)})


def test_repeated_or_empty_categories_are_refused():
    with pytest.raises(ValueError, match="repeated categories"):
        Domain.from_mapping({"x": pl.String}, {"x": ["a", "a"]})
    with pytest.raises(ValueError, match="no categories"):
        Domain.from_mapping({"x": pl.String}, {"x": []})


def test_arrow_schema_round_trip_keeps_every_spec_and_dtype():
    domain = Domain.from_mapping(
        {**SCHEMA, "e": pl.Enum(["u", "v"])},
        {"age": Numeric(17, 90), "sex": Categorical(["F", "M"], nullable=True),
         "hours": {"bounds": (0, 99), "nullable": True}},
        labels=["y"],
    )
    schema = domain.to_arrow_schema()
    assert Domain.from_arrow_schema(schema) == domain
    assert [f.name for f in schema] == list(SCHEMA) + ["e"]


def test_a_tuple_of_categories_is_refused_with_the_list_fix():
    with pytest.raises(TypeError, match=r"'sex' is a tuple \('F', 'M'\).*as a list"):
        Domain.from_mapping({"sex": pl.String}, {"sex": ("F", "M")})


# ------------------------------------------------------------------ integer columns (issue 14)
def test_integer_is_declared_or_implied_by_an_integer_dtype():
    """``integer`` makes a Float64 column whole-numbered; an integer dtype implies it; a float
    column without it stays continuous."""
    schema = {"age": pl.Float64, "hours": pl.Float64, "n": pl.Int32, "w": pl.Float64, "x": pl.Float64}
    domain = Domain.from_mapping(schema, {
        "age": {"bounds": (18, 99), "integer": True},
        "hours": {"bounds": (0, 99), "nullable": True, "integer": True},
        "n": (0, 10), "w": Numeric(0, 5, integer=True), "x": (0, 1),
    })
    assert [domain[c].is_integer for c in schema] == [True, True, True, True, False]
    assert domain["hours"].nullable and domain["w"].integer and not domain["n"].integer
    assert Numeric(18, 99, integer=True) == Numeric(18.0, 99.0, integer=True) != Numeric(18, 99)


def test_integer_survives_the_arrow_round_trip():
    domain = Domain.from_mapping({"age": pl.Float64, "x": pl.Float64},
                                 {"age": {"bounds": (18, 99), "integer": True}, "x": (0, 1)})
    again = Domain.from_arrow_schema(domain.to_arrow_schema())
    assert again == domain and again["age"].is_integer and not again["x"].is_integer


@pytest.mark.parametrize(("entry", "error", "message"), [
    ({"bounds": (17.5, 99), "integer": True}, ValueError,
     r"column 'age' is declared integer but its bounds \(17.5, 99.0\) are not whole numbers"),
    (Numeric(18, 99.5, integer=True), ValueError, r"column 'age' is declared integer but its bounds"),
    ({"bounds": (18, 99), "integer": "yes"}, TypeError, r"column 'age': 'integer' must be True or False. Got 'yes'"),
    ({"categories": [1, 2], "integer": True}, ValueError,
     r"column 'age': 'integer' applies to numeric bounds, not to categories"),
])
def test_bad_integer_declarations_name_the_column(entry, error, message):
    with pytest.raises(error, match=message):
        Domain.from_mapping({"age": pl.Float64}, {"age": entry})
