"""Encoding real rows and decoding relaxed rows: invariants of schema, bounds, categories."""

import numpy as np
import polars as pl
import pytest

from polars_rap.schema.domain import Domain
from polars_rap.decode.decoding import decode, spread_rows, stratified_uniforms
from polars_rap.schema.encoding import encode


@pytest.fixture
def frame():
    return pl.DataFrame({
        "age": pl.Series([17, 40, 90, 120, 5], dtype=pl.Int32),
        "city": ["a", "b", None, "a", "c"],
        "hours": [1.5, None, 40.0, float("nan"), 99.0],
        "y": pl.Series(["no", "yes", "no", "no", "yes"], dtype=pl.Enum(["no", "yes"])),
    })


@pytest.fixture
def domain(frame):
    return Domain.from_mapping(
        frame.schema,
        {"age": (17, 95), "city": ["a", "b", "c", None], "hours": {"bounds": (0, 100), "nullable": True}},
        labels=["y"],
    )


def test_encode_codes_scales_and_clips(frame, domain, caplog):
    encoded = encode(frame, domain)
    city, y, hours_null = (domain.block_index("city"), domain.block_index("y"),
                           domain.block_index("hours", indicator=True))
    assert encoded.codes[:, city].tolist() == [0, 1, 3, 0, 2]  # null is the last code
    assert encoded.codes[:, y].tolist() == [0, 1, 0, 0, 1]
    assert encoded.codes[:, hours_null].tolist() == [0, 1, 0, 1, 0]  # NaN counts as null
    age = encoded.numerics[:, 0]
    np.testing.assert_allclose(age, [0.0, 23 / 78, 73 / 78, 1.0, 0.0])  # 120 and 5 clipped
    assert encoded.numerics[1, 1] == 0.0  # a null numeric sits at its lower bound
    assert "2 values outside the domain's bounds" in caplog.text


def test_undeclared_category_lists_offending_values_and_fix(frame, domain):
    bad = frame.with_columns(pl.Series("city", ["a", "zz", "b", "yy", "zz"]))
    with pytest.raises(ValueError, match=r"'city' holds 3 values outside.*'zz', 'yy'.*domain="):
        encode(bad, domain)


def test_null_in_column_declared_without_nulls_is_an_error(frame):
    domain = Domain.from_mapping(frame.schema, {"age": (17, 95), "city": ["a", "b", "c"],
                                                "hours": {"bounds": (0, 100), "nullable": True}})
    with pytest.raises(ValueError, match=r"'city' holds 1 nulls.*Add None"):
        encode(frame, domain)
    domain = Domain.from_mapping(frame.schema, {"age": (17, 95), "city": ["a", "b", "c", None],
                                                "hours": (0, 100)})
    with pytest.raises(ValueError, match=r"'hours' holds 2 nulls/NaN.*nullable"):
        encode(frame, domain)


def test_string_in_numeric_column_is_an_error(domain, frame):
    bad = frame.with_columns(pl.col("age").cast(pl.String))
    with pytest.raises(ValueError, match="'age' is declared numeric but holds String"):
        encode(bad, Domain.from_mapping(frame.schema, {"age": (17, 95), "city": ["a", "b", "c", None],
                                                       "hours": {"bounds": (0, 100), "nullable": True}}))


def test_decode_keeps_schema_bounds_categories_and_row_count(frame, domain):
    rng = np.random.default_rng(0)
    relaxed = rng.random((7, domain.n_coords)).astype(np.float32)
    out = decode(relaxed, domain, 1000, rng)
    assert out.height == 1000
    assert out.schema == frame.schema
    assert out["age"].min() >= 17 and out["age"].max() <= 95
    assert set(out["city"].drop_nulls().to_list()) <= {"a", "b", "c"}
    hours = out["hours"].drop_nulls()
    assert hours.min() >= 0 and hours.max() <= 100
    assert out["y"].dtype == pl.Enum(["no", "yes"])


def test_decode_follows_the_relaxed_probabilities(domain):
    """A relaxed row with probability 1 on a category always decodes to it; null rates follow
    the indicator probability."""
    relaxed = np.zeros((2, domain.n_coords), dtype=np.float32)
    city = slice(0, 4)
    relaxed[:, city] = [[0, 1, 0, 0], [0, 0, 0, 1]]  # 'b' and null
    relaxed[:, 4:6] = [1, 0]  # y = 'no'
    relaxed[:, 6:8] = [[0.5, 0.5], [0.5, 0.5]]  # hours null with probability 1/2
    relaxed[:, 8:] = [0.5, 0.25]
    out = decode(relaxed, domain, 4000, np.random.default_rng(1))
    counts = out["city"].value_counts()
    assert set(counts["city"].to_list()) == {"b", None}
    assert out["y"].unique().to_list() == ["no"]
    assert out["age"].unique().sort().to_list() == [56]  # 17 + 0.5 * 78 = 56
    assert abs(out["hours"].null_count() / 4000 - 0.5) < 0.05  # 0.05 is > 6 standard errors


def test_spread_rows_uses_each_relaxed_row_equally():
    rows = spread_rows(10, 1003, np.random.default_rng(0))
    counts = np.bincount(rows, minlength=10)
    assert counts.sum() == 1003 and counts.min() == 100 and counts.max() == 101


def test_decode_in_chunks_gives_the_same_rows(monkeypatch):
    """Decoding works in bounded chunks of output rows; the chunk size never changes the rows."""
    import polars_rap.decode.decoding as decoding_module

    domain = Domain.from_mapping(
        {"a": pl.Int64, "b": pl.String, "x": pl.Float64},
        {"a": (0, 10), "b": ["p", "q", None], "x": {"bounds": (0, 1), "nullable": True}},
    )
    relaxed = np.random.default_rng(0).random((50, domain.n_coords)).astype(np.float32)
    whole = decode(relaxed, domain, 2345, np.random.default_rng(5))
    monkeypatch.setattr(decoding_module, "_DECODE_CHUNK_ROWS", 100)
    chunked = decode(relaxed, domain, 2345, np.random.default_rng(5))
    assert chunked.equals(whole) and chunked.height == 2345
    assert decode(relaxed, domain, 0, np.random.default_rng(5)).schema == whole.schema


def test_controlled_decoding_matches_each_relaxed_row_to_one_row(domain):
    """Two relaxed rows told apart by their label; each yields 1,500 copies. Controlled
    decoding gives every category of every block k p copies up to one (independent draws
    are off by tens); integers are the relaxed value's nearest, as with independent draws."""
    relaxed = np.zeros((2, domain.n_coords), dtype=np.float32)
    relaxed[:, 0:4] = [[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.5, 0.0]]  # city a, b, c, null
    relaxed[:, 4:6] = [[1, 0], [0, 1]]  # y = 'no' for row 0, 'yes' for row 1
    relaxed[:, 6:8] = [[0.7, 0.3], [1.0, 0.0]]  # hours null with probability 0.3, then 0
    relaxed[:, 8:] = [[0.3, 0.5], [0.77, 0.25]]  # age = 17 + 78 x: 40.4 and 77.06
    out = decode(relaxed, domain, 3000, np.random.default_rng(2), method="controlled")
    for label, row in (("no", 0), ("yes", 1)):
        copies = out.filter(pl.col("y") == label)
        assert copies.height == 1500
        counts = copies["city"].value_counts()
        for category, p in zip(["a", "b", "c", None], relaxed[row, 0:4], strict=True):
            found = counts.filter(pl.col("city").eq_missing(category))["count"].sum()
            assert abs(found - 1500 * float(p)) <= 1
        assert abs(copies["hours"].null_count() - 1500 * float(relaxed[row, 7])) <= 1
        age = 17 + 78 * float(relaxed[row, 8])
        assert copies["age"].unique().to_list() == [round(age)]


def test_controlled_decoding_pairs_blocks_independently(domain):
    """One relaxed row, 8,000 copies, two blocks: the joint cell counts are those of
    independent blocks (p_a p_b), within 4 binomial standard errors."""
    relaxed = np.zeros((1, domain.n_coords), dtype=np.float32)
    relaxed[0, 0:4] = [0.5, 0.5, 0.0, 0.0]
    relaxed[0, 4:6] = [0.5, 0.5]
    relaxed[0, 6:8] = [1.0, 0.0]
    out = decode(relaxed, domain, 8000, np.random.default_rng(3), method="controlled")
    joint = out.group_by("city", "y").len()
    assert joint.height == 4
    assert all(abs(n - 2000) <= 4 * np.sqrt(8000 * 0.25 * 0.75) for n in joint["len"])


def test_stratified_uniforms_are_uniform_and_stratified():
    """Marginally uniform (KS against U[0, 1)); the c entries sharing a row fall one in each
    of c equal strata."""
    from scipy import stats

    rng = np.random.default_rng(4)
    rows = rng.integers(0, 40, size=5000)
    uniforms = stratified_uniforms(rows, 3, rng)
    assert uniforms.shape == (5000, 3) and uniforms.min() >= 0.0 and uniforms.max() < 1.0
    assert stats.kstest(uniforms.ravel(), "uniform").pvalue > 1e-4
    for row in range(40):
        mine = uniforms[rows == row]
        strata = np.sort(np.floor(mine * len(mine)), axis=0)
        assert np.array_equal(strata, np.tile(np.arange(len(mine))[:, None], (1, 3)))


def test_unknown_decoding_is_refused(domain):
    relaxed = np.zeros((1, domain.n_coords), dtype=np.float32)
    with pytest.raises(ValueError, match="unknown decoding 'round'"):
        decode(relaxed, domain, 10, np.random.default_rng(0), method="round")


def test_integer_float_columns_decode_to_whole_numbers_of_their_dtype():
    """A Float64 column declared ``integer`` decodes to whole numbers, still Float64, inside
    its bounds, nulls kept; one without the flag keeps fractions (issue 14: age = 35.16)."""
    domain = Domain.from_mapping(
        {"age": pl.Float64, "hours": pl.Float32, "x": pl.Float64},
        {"age": {"bounds": (18, 99), "integer": True},
         "hours": {"bounds": (0, 99), "nullable": True, "integer": True}, "x": (0, 1)},
    )
    relaxed = np.random.default_rng(0).random((50, domain.n_coords)).astype(np.float32)
    for method in ("independent", "controlled"):
        out = decode(relaxed, domain, 3000, np.random.default_rng(1), method=method)
        assert out.schema == {"age": pl.Float64, "hours": pl.Float32, "x": pl.Float64}
        for name, (low, high) in (("age", (18, 99)), ("hours", (0, 99))):
            values = out[name].drop_nulls().to_numpy()
            assert np.array_equal(values, np.round(values)) and low <= values.min() and values.max() <= high
        assert 0 < out["hours"].null_count() < 3000
        assert not np.array_equal(out["x"].to_numpy(), np.round(out["x"].to_numpy()))


def _stratified_reference(rows, n_columns, rng):
    """The plain form of stratified_uniforms: lexsort by (relaxed row, uniform) per column,
    ranks by searching each sorted row's first position; the same draws in the same order."""
    rows = np.asarray(rows, dtype=np.int64)
    out = np.empty((len(rows), n_columns), dtype=np.float64)
    counts = np.bincount(rows)
    for column in range(n_columns):
        order = np.lexsort((rng.random(len(rows)), rows))
        sorted_rows = rows[order]
        rank = np.arange(len(rows)) - np.searchsorted(sorted_rows, sorted_rows, side="left")
        offset = rng.random(len(counts))
        out[order, column] = (rank + offset[sorted_rows]) / counts[sorted_rows]
    return out


@pytest.mark.parametrize("n_relaxed, n_out", [(1, 10), (5, 7), (300, 48_842), (1_000, 27_540), (27_540, 100_000)])
def test_stratified_uniforms_equal_the_lexsort_reference_bit_for_bit(n_relaxed, n_out):
    """The one-key sort gives the reference's uniforms exactly (from the same generator state)."""
    rows = spread_rows(n_relaxed, n_out, np.random.default_rng(n_out))
    expected = _stratified_reference(rows, 6, np.random.default_rng(1))
    np.testing.assert_array_equal(stratified_uniforms(rows, 6, np.random.default_rng(1)), expected)


@pytest.mark.parametrize("masked", ["none", "shared", "per relaxed row"])
def test_the_code_kernel_equals_the_numpy_reference_bit_for_bit(masked):
    """:func:`~polars_rap.kernels.cpu_sampling.draw_codes` on one block (coordinates 2 .. 2 +
    width of the relaxed rows) against its NumPy reference on relaxed rows with negative and
    zero probabilities, an all-zero row (it decodes to the last code), uniforms at 0 and just
    under 1, and each kind of mask."""
    from polars_rap.kernels.cpu_sampling import block_cdfs, codes_reference, draw_codes

    rng = np.random.default_rng(3)
    for n_relaxed, width in [(1, 1), (7, 2), (300, 25), (50, 40)]:
        relaxed = rng.normal(0.1, 0.3, (n_relaxed, width + 5)).astype(np.float32).astype(np.float64)
        relaxed[rng.random(relaxed.shape) < 0.2] = 0.0
        relaxed[0, 2:2 + width] = 0.0
        rows = rng.integers(0, n_relaxed, 4_000)
        uniform = rng.random(4_000)
        uniform[:2] = [0.0, np.nextafter(1.0, 0.0)]
        mask = {"none": None, "shared": (rng.random((1, width)) < 0.6).astype(np.float64),
                "per relaxed row": (rng.random((n_relaxed, width)) < 0.5).astype(np.float64)}[masked]
        block = [slice(0, width)]
        cdfs = block_cdfs(relaxed[:, 2:2 + width], block, None if mask is None else {0: mask})
        got = draw_codes(cdfs, block, rows, uniform[:, None])[:, 0]
        assert got.dtype == np.int32
        assert np.array_equal(got, codes_reference(relaxed, rows, 2, 2 + width, uniform, mask))
        assert np.all(got[(rows == 0) & (uniform > 0)] == width - 1)  # all-zero row: the last code


def test_every_block_drawn_in_one_pass_equals_the_reference_block_by_block():
    """:func:`~polars_rap.kernels.cpu_sampling.draw_codes` over several blocks at once, with a
    mask on some blocks and uniforms in a transposed (column-major) layout as controlled decoding
    passes them, against the NumPy reference one block at a time."""
    from polars_rap.kernels.cpu_sampling import block_cdfs, codes_reference, draw_codes

    rng = np.random.default_rng(8)
    widths = [1, 3, 9, 2, 30]
    slices = [slice(int(a), int(b)) for a, b in zip(np.cumsum([0] + widths[:-1]), np.cumsum(widths), strict=True)]
    relaxed = rng.normal(0.1, 0.3, (40, sum(widths) + 2))
    relaxed[rng.random(relaxed.shape) < 0.2] = 0.0
    masks = {2: (rng.random((40, 9)) < 0.5).astype(np.float64), 4: (rng.random((1, 30)) < 0.5).astype(np.float64)}
    rows = rng.integers(0, 40, 5_000)
    uniforms = np.ascontiguousarray(rng.random((len(widths), 5_000))).T
    got = draw_codes(block_cdfs(relaxed, slices, masks), slices, rows, uniforms)
    for b, block in enumerate(slices):
        expected = codes_reference(relaxed, rows, block.start, block.stop, uniforms[:, b].copy(), masks.get(b))
        assert np.array_equal(got[:, b], expected)


def test_ranks_among_sorted_anchors_equal_numpys_searches():
    """:func:`~polars_rap.kernels.cpu_sampling.ranks_among` against ``np.searchsorted`` left and
    right: continuous keys, repeated keys equal to many anchors, keys outside the anchors, NaN."""
    from polars_rap.kernels.cpu_sampling import ranks_among

    rng = np.random.default_rng(9)
    for anchors, keys in [(rng.random(1), rng.random(10)), (rng.random(5_000), rng.random(20_000)),
                          (rng.integers(0, 12, 3_000).astype(float), rng.integers(-2, 15, 9_000).astype(float))]:
        anchors[-1] = np.nan
        keys[:3] = [np.nan, -np.inf, np.inf]
        anchors = np.sort(anchors)
        below, equal = ranks_among(anchors, keys)
        left = np.searchsorted(anchors, keys, side="left")
        assert np.array_equal(below, left)
        assert np.array_equal(equal, np.searchsorted(anchors, keys, side="right") - left)


def test_value_then_key_order_is_the_lexsort_s_order_to_the_element() -> None:
    """value_then_key_order(values, keys) == np.lexsort((keys, values)): float and integer
    values with many ties, random keys and keys with many ties of their own (the stable path)."""
    from polars_rap.kernels.cpu_sampling import value_then_key_order

    rng = np.random.default_rng(11)
    for n in (0, 1, 2, 31, 4_000):
        for values in (rng.integers(0, 4, n), np.where(rng.random(n) < 0.8, 0.0, rng.random(n))):
            for keys in (rng.random(n), rng.integers(0, 3, n).astype(np.float64)):
                np.testing.assert_array_equal(value_then_key_order(values, keys), np.lexsort((keys, values)))
