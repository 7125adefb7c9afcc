"""bench/wide.py's generated tables: a table written in blocks is one table."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # bench/ is a folder of the repository, not of the package
    sys.path.insert(0, str(REPO_ROOT))

from bench import wide  # noqa: E402


def test_a_network_table_written_in_blocks_is_rows_of_one_network(tmp_path, monkeypatch):
    """Every Parquet part holds rows of the same network (same columns and dtypes, so the parts
    scan as one table), the first part is the 100,000-row table's rows, and the parts differ."""
    monkeypatch.setattr(wide, "BLOCK_ROWS", 40)
    first = wide._write_blocks("bn", 12, 100, tmp_path)
    parts = sorted(tmp_path.glob("part-*.parquet"))
    assert len(parts) == 3
    scanned = pl.scan_parquet(parts).collect()
    assert scanned.height == 100 and scanned.schema == first.frame.schema
    assert first.frame.equals(wide.bayes_net_table(12, 40, 0).frame)
    assert not pl.read_parquet(parts[1]).equals(pl.read_parquet(parts[0]))


def test_the_fit_table_lists_only_the_failures_no_later_run_fixed():
    """A failed run that a later run of the same table, mechanism and seed replaced is history;
    one without such a run (or whose rerun failed again) is still listed."""
    def ok(seed, seconds):
        return {"kind": "bn", "columns": 50, "rows": 1000, "mechanism": "rap++", "seed": seed,
                "seconds": seconds, "other_processes_cores": 0.0}

    def failed(seed, error):
        return {"kind": "bn", "columns": 50, "rows": 1000, "mechanism": "rap++", "seed": seed, "error": [error]}

    rows = [failed(0, "fixed since"), ok(0, 10.0), ok(1, 12.0), failed(1, "failed after a success"),
            failed(2, "never rerun")]
    text = wide.fit_markdown(rows)
    assert "fixed since" not in text
    assert "failed after a success" in text and "never rerun" in text
    assert "| bn | 50 | 1000 | rap++ | 2 | 11.0 |" in text


def test_the_fit_table_keeps_the_latest_row_of_each_machine_and_seed():
    """A rerun (``fit --rerun``) supersedes the same machine's earlier row of that table and
    seed; another machine's rows stay its own; the commits column names the rows' code."""
    def ok(seed, seconds, machine, commit):
        return {"kind": "bn", "columns": 50, "rows": 1000, "mechanism": "rap++", "seed": seed, "seconds": seconds,
                "other_processes_cores": 0.0, "machine": machine, "commit": commit}

    rows = [ok(0, 10.0, "A", "1111111aa"), ok(1, 20.0, "A", "1111111aa"), ok(0, 30.0, "A", "2222222bb"),
            ok(0, 5.0, "B", "1111111aa")]
    text = wide.fit_markdown(rows)
    assert "| A | bn | 50 | 1000 | rap++ | 2 | 25.0 |" in text and "1111111 2222222 |" in text
    assert "| B | bn | 50 | 1000 | rap++ | 1 | 5.0 |" in text
