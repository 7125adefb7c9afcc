"""What the benchmarks share (bench/harness.py): the results rows' identity, a stage in a fresh
process, the JSON record, the ACS state tables."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # bench/ is a folder of the repository, not of the package
    sys.path.insert(0, str(REPO_ROOT))

from bench import harness  # noqa: E402


def test_run_key_ignores_json_spelling_and_number_types():
    a = harness.run_key("adult", "rap-binned", '{"bins": 20, "eval": {"b": 1, "a": 2}}', 1, 0)
    b = harness.run_key("adult", "rap-binned", {"eval": {"a": 2, "b": 1}, "bins": 20}, 1.0, np.int64(0))
    assert a == b
    assert a != harness.run_key("adult", "rap-binned", {"eval": {"a": 2, "b": 1}, "bins": 30}, 1.0, 0)
    spec = {"dataset": "adult", "mechanism": "rap-binned", "parameters": {"bins": 20, "eval": {"a": 2, "b": 1}},
            "epsilon": 1, "seed": 0}
    assert harness.spec_key(spec) == a


def test_a_stage_runs_in_its_own_process_and_comes_back_as_a_row_with_the_load(tmp_path, capsys):
    script = tmp_path / "stage.py"
    script.write_text("import json, sys\nassert sys.argv[1] == '--stage'\n"
                      "if sys.argv[2] == 'fail': raise SystemExit('no luck')\n"
                      "print('noise'); print(json.dumps({'stage': sys.argv[2], 'n': int(sys.argv[3])}))\n")
    row = harness.run_stage(script, "count", 3)
    assert row["stage"] == "count" and row["n"] == 3
    assert {"load_average_1min_before", "load_average_1min_after", "other_processes_cores"} <= set(row)
    assert harness.run_stage(script, "fail", 0) == {"stage": "fail", "error": ["no luck"]}
    assert "no luck" in capsys.readouterr().err


def test_a_record_is_headed_by_the_benchmark_commit_machine_and_date(tmp_path):
    path = harness.write_record(tmp_path / "sub" / "record.json", "toy", runs=[{"seconds": 1.5}])
    record = json.loads(path.read_text())
    assert list(record)[:4] == ["benchmark", "commit", "machine", "date"] and record["benchmark"] == "toy"
    assert record["machine"]["cores"] >= 1 and record["runs"] == [{"seconds": 1.5}]


def test_the_acs_state_tables_take_the_tasks_preprocessing(acs_state_folder, task):
    tmp_path = acs_state_folder
    assert [f.stem[-2:] for f in harness.acs_state_files()] == ["CA", "NY", "PR"]
    every = harness.acs_state_tables(task.frame.columns)
    assert every.equals(task.frame.head(90))  # the bundled CA task is the same preprocessing
    assert harness.acs_state_tables(task.frame.columns, only="NY").height == 30
    assert harness.acs_state_tables(task.frame.columns, tmp_path, but="CA").height == 50
    with pytest.raises(FileNotFoundError, match="for TX"):
        harness.acs_state_files(only="TX")
