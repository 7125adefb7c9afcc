"""bench.decode_spread's table: means over seeds and decodings, each fit's own decoding, the
spread within a fit, and the ratios to the run without a public table."""

import polars as pl
import pytest

from bench.decode_spread import summary


def test_the_summary_separates_a_fits_own_decoding_its_spread_and_the_ratios():
    rows = []
    for condition, scale in (("none", 1.0), ("mismatched/labels", 1.5)):
        for seed in (0, 1):
            for decode, lt in enumerate((2.0, 4.0, 6.0)):
                rows.append({"condition": condition, "epsilon": 1.0, "seed": seed, "decode": decode,
                             "CM_mean_error": scale, "MM_mean_error": scale * (1 + seed),
                             "LT_mean_error": scale * lt, "macro_f1": 0.7 + 0.1 * (scale - 1)})
    table = summary(pl.DataFrame(rows)).to_dicts()
    by = {row["condition"]: row for row in table}
    assert [row["condition"] for row in table] == ["mismatched/labels", "none"]
    none, labelled = by["none"], by["mismatched/labels"]
    assert none["LT_mean_error"] == pytest.approx(4.0) and none["LT_mean_error_own"] == pytest.approx(2.0)
    assert none["LT_mean_error_sd"] == pytest.approx(2.0) and none["MM_mean_error_sd"] == pytest.approx(0.0)
    assert none["MM_mean_error"] == pytest.approx(1.5)
    assert labelled["LT_vs_none"] == pytest.approx(1.5) and labelled["CM_vs_none"] == pytest.approx(1.5)
    assert labelled["F1_minus_none"] == pytest.approx(0.05) and none["LT_vs_none"] == pytest.approx(1.0)
    assert (none["seeds"], none["decodes"]) == (2, 3)
