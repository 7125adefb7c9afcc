"""bench/peer_sampler.py: the Markov blanket and 2-way marginal distances it reports."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # bench/ is a folder of the repository, not of the package
    sys.path.insert(0, str(REPO_ROOT))

from bench import peer_sampler  # noqa: E402


def test_markov_blanket_is_every_clique_neighbour():
    tree = [("age", "income"), ("income", "sex"), ("sex", "race"), ("age", "hours")]
    assert peer_sampler.markov_blanket(tree, "income") == ["age", "sex"]
    assert peer_sampler.markov_blanket(tree, "race") == ["sex"]
    assert peer_sampler.markov_blanket([("a", "b", "c"), ("c", "d")], "c") == ["a", "b", "d"]
    assert peer_sampler.markov_blanket(tree, "absent") == []


def test_pair_tv_matches_the_definition():
    real = pl.DataFrame({"a": [0, 0, 1, 1], "b": [0, 1, 0, 2]})
    synthetic = pl.DataFrame({"a": [0, 0, 0, 1, 1, 1, 1, 1], "b": [0, 0, 1, 1, 1, 1, 2, 2]})
    sizes = {"a": 2, "b": 3}
    # real cells (a,b): (0,0) .25, (0,1) .25, (1,0) .25, (1,2) .25
    # synthetic:        (0,0) .25, (0,1) .125, (1,1) .375, (1,2) .25
    expected = 0.5 * (0 + 0.125 + 0.25 + 0.375 + 0)
    assert peer_sampler.pair_tv(real, synthetic, "a", "b", sizes) == pytest.approx(expected, abs=1e-15)
    assert peer_sampler.pair_tv(real, real, "a", "b", sizes) == 0.0
    disjoint = pl.DataFrame({"a": [0], "b": [2]})
    assert peer_sampler.pair_tv(pl.DataFrame({"a": [1], "b": [0]}), disjoint, "a", "b", sizes) == 1.0


def test_pair_errors_split_edges_from_other_pairs():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 5000)
    real = pl.DataFrame({"a": a, "b": (a + rng.integers(0, 2, 5000)) % 3, "c": rng.integers(0, 2, 5000)})
    # keeps a-b's dependence, destroys nothing else: the a-c and b-c pairs are independent anyway
    same = real.with_columns(pl.col("c").shuffle(seed=1))
    # breaks a-b's dependence: b drawn independently of a, with the same 1-way marginal
    broken = real.with_columns(pl.col("b").shuffle(seed=2))
    sizes = {"a": 3, "b": 3, "c": 2}
    tree = [("a", "b"), ("b", "c")]
    kept, lost = (peer_sampler.pair_errors(real, frame, sizes, tree) for frame in (same, broken))
    assert set(kept) == {"edges", "other_pairs"}
    assert kept["edges"] < 0.03 and kept["other_pairs"] < 0.03
    # a-b's TV from the product of its marginals is 1/3 (cells 1/6 where b - a is 0 or 1, else 0)
    assert peer_sampler.pair_tv(real, broken, "a", "b", sizes) == pytest.approx(1 / 3, abs=0.03)
    edge_tvs = [peer_sampler.pair_tv(real, broken, *pair, sizes) for pair in tree]
    assert lost["edges"] == pytest.approx(np.mean(edge_tvs), abs=0)
    expected_other = peer_sampler.pair_tv(real, broken, "a", "c", sizes)  # the only non-edge pair
    assert lost["other_pairs"] == pytest.approx(expected_other, abs=0)


def test_summary_averages_seeds_per_epsilon_and_lists_each_fit():
    fits = pl.DataFrame({
        "dataset": ["adult"] * 3, "epsilon": [1.0, 1.0, 5.0], "seed": [0, 1, 0], "bins": [50] * 3,
        "blanket": ["relationship", "capital-gain relationship", "relationship"],
        "f1_shipped": [0.6, 0.7, 0.8], "f1_fixed": [0.5, 0.6, 0.7], "f1_real_blanket": [0.55, 0.55, 0.72],
        "f1_real": [0.78] * 3, "tv_edges_shipped": [0.04, 0.06, 0.01], "tv_edges_fixed": [0.05, 0.05, 0.02],
        "tv_other_pairs_shipped": [0.1, 0.2, 0.15], "tv_other_pairs_fixed": [0.05, 0.07, 0.04],
        "machine": ["cpu x2"] * 3, "commit": ["abc"] * 3,
    })
    text = peer_sampler.summary_markdown(fits)
    assert "| adult | 1 | 2 | 0.65 | 0.55 | 0.55 | 0.78 | 0.05 | 0.05 | 0.15 | 0.06 |" in text
    assert "| adult | 5 | 1 | 0.8 | 0.7 | 0.72 | 0.78 | 0.01 | 0.02 | 0.15 | 0.04 |" in text
    assert "| adult | 1 | 1 | capital-gain relationship | 0.7 | 0.6 | 0.55 |" in text
    assert "cpu x2" in text and "abc" in text
