"""The Ray engine (issue #17) on a local 2-CPU Ray: the pass over the rows equals the
in-process pass bit for bit whatever the blocks, survives failed kernel calls and lost
workers without losing or doubling a row, gives the in-process errors, and the partitioned
output does not depend on the Ray layout.

One Ray instance serves the module (``ray.init`` costs seconds). Its workers get this
checkout's ``src`` and ``tests`` folders on their PYTHONPATH, and a test checks that they
import the same ``polars_rap`` as this process.
"""

from __future__ import annotations

import filecmp
import math
import os
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

ray = pytest.importorskip("ray", reason="the Ray engine's tests need Ray: pip install 'polars-rap[ray]'")
import ray.data  # noqa: E402

import polars_rap  # noqa: E402
import ray_flaky_backend  # noqa: E402  (tests/ is on sys.path: pytest's rootdir-relative import)
from polars_rap.cli import commands as cli  # noqa: E402
from polars_rap.io.blocks import write_parquet  # noqa: E402
from polars_rap.errors import DataError  # noqa: E402
from polars_rap.kernels import get_backend  # noqa: E402
from polars_rap.pipeline.model import SyntheticModel  # noqa: E402
from polars_rap import PlannedStrategy, ProjectionConfig, WorkloadSize  # noqa: E402
from polars_rap.io.ray_engine import RaySource  # noqa: E402
from polars_rap.io.source import DataSource, exact_answers
from polars_rap.io.engines import open_source  # noqa: E402
from polars_rap.workload.builders import build_workload  # noqa: E402

SRC = Path(polars_rap.__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
LOOP = dict(relaxed_rows=50, rounds={"CM": 1, "LT": 1}, workload=WorkloadSize(n_linear_thresholds=100),
            projection=ProjectionConfig(max_steps=3, max_doublings=1))
"""The runs' small loop (settings every strategy takes)."""
FAST = dict(strategy=PlannedStrategy(**LOOP), rows=2_000, progress=False)


@pytest.fixture(scope="module")
def flaky_dir(tmp_path_factory):
    """A local Ray with 2 CPUs for the module; yields the flaky backend's marker folder."""
    folder = tmp_path_factory.mktemp("flaky")
    assert not ray.is_initialized()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {
        "PYTHONPATH": os.pathsep.join([str(SRC), str(TESTS)]), "RAY_FLAKY_DIR": str(folder)}})
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    yield folder
    ray.shutdown()


@pytest.fixture(scope="module")
def queries(domain):
    return build_workload(domain, np.random.default_rng(0), classes=("CM", "MM", "LT"),
                          n_linear_thresholds=500, n_mixed_marginals=100)


@pytest.fixture(scope="module")
def in_process(task, domain, queries):
    """The in-process pass on the whole CA table: (answers, n_rows)."""
    return exact_answers(DataSource.from_input(task.frame), domain, queries, get_backend("cpu"))


def blocks_of(frame: pl.DataFrame, n_blocks: int):
    """``frame`` as a Ray Dataset of ``n_blocks`` blocks (uneven: cut at random-looking rows)."""
    cuts = np.linspace(0, frame.height, n_blocks + 1).astype(int)
    parts = [frame.slice(a, b - a).to_arrow() for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    return ray.data.from_arrow(parts)


@pytest.fixture(scope="module")
def parquet_folder(task, tmp_path_factory):
    """The CA table as a folder of 5 Parquet files (each of several row groups)."""
    folder = tmp_path_factory.mktemp("ca_parts")
    cuts = np.linspace(0, task.frame.height, 6).astype(int)
    for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)):
        task.frame.slice(a, b - a).write_parquet(folder / f"part-{k}.parquet", row_group_size=2_000)
    return folder


def test_workers_import_this_checkout(flaky_dir):
    @ray.remote
    def where() -> str:
        import polars_rap as imported
        return imported.__file__

    assert ray.get([where.remote() for _ in range(4)]) == [polars_rap.__file__] * 4


@pytest.mark.parametrize(("n_blocks", "batch_rows"), [(1, None), (9, None), (23, 700)])
def test_answers_equal_the_in_process_pass_bit_for_bit(flaky_dir, task, domain, queries, in_process,
                                                       n_blocks, batch_rows):
    answers, n_rows = exact_answers(RaySource.from_input(blocks_of(task.frame, n_blocks)), domain,
                                    queries, get_backend("cpu"), batch_rows=batch_rows)
    assert n_rows == in_process[1] == task.frame.height
    assert answers.dtype == np.float64 and np.array_equal(answers, in_process[0])


def test_failed_kernel_calls_are_retried_and_nothing_is_lost_or_doubled(flaky_dir, task, domain, queries,
                                                                        in_process):
    """Every batch's first kernel call raises; the count is run again on its block, and the
    answers are still exact: each batch failed exactly once (one marker each)."""
    _clear(flaky_dir)
    answers, n_rows = exact_answers(RaySource.from_input(blocks_of(task.frame, 6)), domain, queries,
                                    ray_flaky_backend, batch_rows=4_000)
    assert n_rows == task.frame.height and np.array_equal(answers, in_process[0])
    assert len(list(flaky_dir.iterdir())) == 6 * 2  # 6 blocks of ~5,700 rows: 2 batches each


def test_a_lost_worker_is_rerun_by_ray_and_nothing_is_lost_or_doubled(flaky_dir, task, domain, queries,
                                                                      in_process):
    """The worker counting each block dies on its first try (as under an OOM kill); Ray runs
    the task again on a new worker, and the answers are still exact."""
    _clear(flaky_dir)
    (flaky_dir / "exit-mode").touch()
    try:
        answers, n_rows = exact_answers(RaySource.from_input(blocks_of(task.frame, 2)), domain, queries,
                                        ray_flaky_backend)
        assert len(list(flaky_dir.iterdir())) == 1 + 2  # exit-mode, and one marker per block
    finally:
        _clear(flaky_dir)
    assert n_rows == task.frame.height and np.array_equal(answers, in_process[0])


@pytest.mark.parametrize("piece_rows", [1, 5_000, 10**9])
def test_parquet_pieces_equal_the_in_process_pass_bit_for_bit(flaky_dir, task, domain, queries, in_process,
                                                              parquet_folder, piece_rows):
    """Parquet paths are cut into pieces of whole row groups (one row group each, 5,000 rows,
    one piece per file): every row is counted once whatever the cut, a file's row groups
    spread over several tasks."""
    source = RaySource.from_input(parquet_folder, piece_rows=piece_rows)
    groups = sum(pq.ParquetFile(f).num_row_groups for f in parquet_folder.iterdir())
    assert len(source.pieces.pieces) == {1: groups, 5_000: 5 * 2, 10**9: 5}[piece_rows]
    answers, n_rows = exact_answers(source, domain, queries, get_backend("cpu"), batch_rows=3_000)
    assert n_rows == in_process[1] and np.array_equal(answers, in_process[0])


def test_failed_kernel_calls_on_parquet_pieces_are_retried_exactly(flaky_dir, task, domain, queries, in_process,
                                                                   parquet_folder):
    """As for a Dataset's blocks: each batch's first kernel call raises, its piece is read and
    counted again from zero counts, and the answers are still exact."""
    _clear(flaky_dir)
    source = RaySource.from_input([sorted(parquet_folder.iterdir())[k] for k in (0, 3)], piece_rows=4_000)
    answers, n_rows = exact_answers(source, domain, queries, ray_flaky_backend, batch_rows=4_000)
    rows = [pl.read_parquet(sorted(parquet_folder.iterdir())[k]) for k in (0, 3)]
    expected, expected_rows = exact_answers(DataSource.from_input(pl.concat(rows)), domain, queries,
                                            get_backend("cpu"), batch_rows=4_000)
    assert n_rows == expected_rows and np.array_equal(answers, expected)
    assert len(list(flaky_dir.iterdir())) == len(source.pieces.pieces)  # pieces of <= 4,000 rows: a batch each


def _clear(folder: Path) -> None:
    for path in folder.iterdir():
        path.unlink()


def test_synthesize_on_ray_gives_the_in_process_result(flaky_dir, task):
    """Same answers, same report, same synthetic rows with a seed, with private domain
    inference of two columns (its counts also per block), from the CA table in 11 blocks (a
    Ray Dataset picks the Ray engine by itself)."""
    domain = dict(task.domain)
    domain.update(AGEP="numeric", OCCP="categorical")
    arguments = dict(epsilon=1.0, delta=1e-9, domain=domain, labels=task.labels, seed=7, **FAST)
    here = polars_rap.synthesize(task.frame, **arguments)
    on_ray = polars_rap.synthesize(blocks_of(task.frame, 11), **arguments)
    assert here.report.parameters["inferred_columns"] == ["AGEP", "OCCP"]
    assert on_ray.domain == here.domain
    assert on_ray.report.to_dict() == here.report.to_dict()
    assert np.array_equal(on_ray.relaxed, here.relaxed)
    assert on_ray.data.equals(here.data)


def test_drop_on_ray_gives_the_in_process_result(flaky_dir, task):
    """A column left out with drop is never read by the Ray tasks either: the same rows and
    report as the in-process pass over the table without it."""
    arguments = dict(epsilon=1.0, delta=1e-9, domain=task.domain, labels=task.labels, seed=7, **FAST)
    here = polars_rap.synthesize(task.frame, **arguments)
    wide = task.frame.with_columns(person_id=pl.int_range(pl.len()).cast(pl.String))
    on_ray = polars_rap.synthesize(blocks_of(wide, 5), drop=["person_id"], **arguments)
    assert on_ray.data.equals(here.data)
    assert on_ray.report.parameters == {**here.report.parameters, "dropped_columns": ["person_id"]}


def test_engine_names_the_reader(flaky_dir, task, parquet_folder):
    """Parquet paths with engine='ray' are read by Ray, a Dataset is refused by 'polars', and
    an unknown engine is a parameter error."""
    on_ray = open_source(str(parquet_folder), engine="ray")
    assert isinstance(on_ray, RaySource) and on_ray.schema == task.frame.schema
    assert isinstance(open_source(blocks_of(task.frame, 2)), RaySource)
    with pytest.raises(TypeError, match="pass engine='ray'"):
        open_source(blocks_of(task.frame, 2), engine="polars")
    with pytest.raises(ValueError, match="The 'engine' parameter must be one of"):
        open_source(task.frame, engine="spark")


def test_numeric_ties_on_ray_equal_the_in_process_ones(flaky_dir, task, monkeypatch):
    """The ties' sums are read per block beside the counts and merged on the driver: the same
    release, the same fitted ties and the same rows as in this process (no noise cap, so that
    the CA task's ties are measured at these settings)."""
    from polars_rap.pipeline import fitting

    monkeypatch.setattr(fitting, "TIE_NOISE_CAP", math.inf)
    arguments = dict(epsilon=1.0, delta=1e-9, domain=task.domain, labels=task.labels, seed=3,
                     **{**FAST, "strategy": PlannedStrategy(tie_share=0.2, **LOOP)})
    here = polars_rap.synthesize(task.frame, **arguments)
    on_ray = polars_rap.synthesize(blocks_of(task.frame, 7), **arguments)
    assert here.numeric_ties is not None
    assert np.array_equal(on_ray.numeric_ties.deviations, here.numeric_ties.deviations)
    assert on_ray.report.to_dict() == here.report.to_dict()
    assert on_ray.data.equals(here.data)


def test_public_margins_on_ray_equal_the_in_process_ones(flaky_dir, task):
    """public_use="margins": the margins' counts are read per block beside the counts and the
    ties' sums (two statistics in one pass) and merged on the driver: the same releases, record
    and rows as in this process."""
    arguments = dict(epsilon=0.5, delta=1e-9, domain=task.domain, labels=task.labels, seed=5,
                     public=task.frame.sample(3_000, seed=1), public_use=["margins"], **FAST)
    here = polars_rap.synthesize(task.frame, **arguments)
    on_ray = polars_rap.synthesize(blocks_of(task.frame, 5), **arguments)
    assert here.report.public_data["margins_rho"] > 0
    assert on_ray.report.to_dict() == here.report.to_dict()
    assert on_ray.data.equals(here.data)


def test_bad_input_through_ray_gives_the_in_process_errors(flaky_dir, task, domain, queries):
    bad = task.frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 20_000).then(pl.lit("XXX")).otherwise(pl.col("OCCP")).alias("OCCP"))
    message = r"column 'OCCP' holds 1 values outside its declared categories.*'XXX'"
    with pytest.raises(DataError, match=message + r".*found in the batch of input rows 0 to [\d,]+; nothing was released"):
        exact_answers(DataSource.from_input(bad), domain, queries, get_backend("cpu"))
    with pytest.raises(ValueError, match=message + r".*found in a block of [\d,]+ rows of the Ray dataset"):
        exact_answers(RaySource.from_input(blocks_of(bad, 5)), domain, queries, get_backend("cpu"))
    text = task.frame.with_columns(pl.col("AGEP").cast(pl.String))
    for data in (text, blocks_of(text, 3)):
        with pytest.raises(ValueError, match="'AGEP'"):
            polars_rap.synthesize(data, epsilon=1.0, delta=1e-9, domain=task.domain, labels=task.labels, **FAST)
    with pytest.raises(ValueError, match="the input has no rows; differential privacy needs at least one"):
        exact_answers(RaySource.from_input(blocks_of(task.frame.head(0), 1)), domain, queries,
                      get_backend("cpu"))


def test_bad_parquet_input_through_ray_gives_the_in_process_errors(flaky_dir, task, domain, queries, tmp_path):
    """Read from Parquet pieces: an undeclared category in one file's row group, text in a
    numeric column and an empty file raise the in-process errors, naming the piece."""
    bad = task.frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 20_000).then(pl.lit("XXX")).otherwise(pl.col("OCCP")).alias("OCCP"))
    task.frame.head(10_000).write_parquet(tmp_path / "good.parquet", row_group_size=2_000)
    bad.slice(10_000).write_parquet(tmp_path / "bad.parquet", row_group_size=2_000)
    message = r"column 'OCCP' holds 1 values outside its declared categories.*'XXX'"
    with pytest.raises(DataError, match=message + r".*found in row groups? [\d-]+ of '.*bad.parquet' \(a piece of the Parquet input\)"):
        exact_answers(RaySource.from_input(tmp_path), domain, queries, get_backend("cpu"))
    task.frame.with_columns(pl.col("AGEP").cast(pl.String)).write_parquet(tmp_path / "text.parquet")
    with pytest.raises(ValueError, match="'AGEP'"):
        polars_rap.synthesize(str(tmp_path / "text.parquet"), engine="ray", epsilon=1.0, delta=1e-9,
                              domain=task.domain, labels=task.labels, **FAST)
    task.frame.head(0).write_parquet(tmp_path / "empty.parquet")
    with pytest.raises(DataError, match="the input has no rows; differential privacy needs at least one"):
        RaySource.from_input(tmp_path / "empty.parquet")


def test_the_output_does_not_depend_on_the_ray_layout(flaky_dir, tmp_path):
    """Block i is seeded by (seed, i) alone: the files are byte for byte the same whether
    written here or by 1 or 4 Ray tasks."""
    df = pl.DataFrame({"age": [23, 35, 47, 59] * 50, "sex": ["F", "M"] * 100})
    res = polars_rap.synthesize(df, epsilon=1.0, delta=1e-6, domain={"age": (18, 90), "sex": ["F", "M"]},
                                seed=0, progress=False, strategy=PlannedStrategy(
                                    relaxed_rows=20, rounds={"LT": 2}, workload=WorkloadSize(n_linear_thresholds=20)))
    here = write_parquet(res.model, tmp_path / "here", 25_001, seed=1, block_rows=3_000)
    layouts = [write_parquet(res.model, tmp_path / f"ray{k}", 25_001, seed=1, block_rows=3_000,
                             engine="ray", ray_tasks=k) for k in (1, 4)]
    layouts.append(res.model.write_parquet(tmp_path / "method", 25_001, seed=1, block_rows=3_000, engine="ray"))
    assert len(here) == 9 and pl.read_parquet(here).height == 25_001
    for files in layouts:
        assert [Path(f).name for f in files] == [Path(f).name for f in here]
        assert all(filecmp.cmp(a, b, shallow=False) for a, b in zip(here, files, strict=True))
    assert not pl.read_parquet(here[0]).equals(pl.read_parquet(here[1]))  # blocks differ
    with pytest.raises(FileExistsError, match="not empty; pass overwrite=True"):
        write_parquet(res.model, tmp_path / "here", 10, seed=1, engine="ray")


def test_synthesize_output_on_ray_writes_the_in_process_parts(flaky_dir, task, tmp_path):
    """``synthesize(output=...)`` from a Ray Dataset writes its parts from Ray tasks, byte for
    byte the parts the in-process run writes with the same seed."""
    arguments = dict(epsilon=1.0, delta=1e-9, domain=task.domain, labels=task.labels, seed=2, **FAST)
    here = polars_rap.synthesize(task.frame, output=tmp_path / "here", output_block_rows=700, **arguments)
    on_ray = polars_rap.synthesize(blocks_of(task.frame, 5), output=tmp_path / "ray", output_block_rows=700,
                                   **arguments)
    assert len(here.files) == 3 and [Path(f).name for f in on_ray.files] == [Path(f).name for f in here.files]
    assert all(filecmp.cmp(a, b, shallow=False) for a, b in zip(here.files, on_ray.files, strict=True))
    assert on_ray.report.to_dict() == here.report.to_dict()


def test_ray_writers_apply_a_public_label_model(flaky_dir, task, tmp_path):
    """A model with a public table's label model writes the same parts from Ray tasks as here,
    and its labels are the model's, not the relaxed rows' draws."""
    res = polars_rap.synthesize(task.frame, epsilon=1.0, delta=1e-9, domain=task.domain, labels=task.labels,
                                seed=2, public=task.frame.sample(600, seed=5), public_use=["labels"], **FAST)
    assert res.label_model is not None
    here = write_parquet(res.model, tmp_path / "here", 2_000, seed=1, block_rows=700)
    on_ray = write_parquet(res.model, tmp_path / "ray", 2_000, seed=1, block_rows=700, engine="ray", ray_tasks=2)
    assert all(filecmp.cmp(a, b, shallow=False) for a, b in zip(here, on_ray, strict=True))
    unlabelled = write_parquet(SyntheticModel(res.relaxed, res.domain, res.report), tmp_path / "plain", 2_000,
                               seed=1, block_rows=700)
    ours, plain = pl.read_parquet(here), pl.read_parquet(unlabelled)
    numeric = [spec.name for spec in res.domain.numeric_columns]  # permuted within the redrawn labels
    assert ours.drop([*task.labels, *numeric]).equals(plain.drop([*task.labels, *numeric])) and not ours.equals(plain)


def test_cli_synthesizes_on_ray_and_samples_parts(flaky_dir, task, parquet_folder, tmp_path, capsys):
    config = tmp_path / "ca.toml"
    config.write_text(polars_rap.cli.config.config_text(task) + "\n[strategy]\nrelaxed_rows = 50\n[strategy.rounds]\n"
                      "CM = 1\nLT = 1\n[strategy.workload]\nn_linear_thresholds = 50\n\n[strategy.projection]\n"
                      "max_steps = 3\n")
    common = ["--epsilon", "1", "--delta", "1e-9", "--config", str(config), "--seed", "0", "--rows", "500",
              "--quiet"]
    assert cli.main(["synthesize", str(parquet_folder), "-o", str(tmp_path / "ray.parquet"),
                     "--engine", "ray", "--model", str(tmp_path / "model"), *common]) == 0
    task.frame.write_parquet(tmp_path / "ca.parquet")
    assert cli.main(["synthesize", str(tmp_path / "ca.parquet"), "-o", str(tmp_path / "here.parquet"), *common]) == 0
    assert pl.read_parquet(tmp_path / "ray.parquet").equals(pl.read_parquet(tmp_path / "here.parquet"))
    assert cli.main(["sample", str(tmp_path / "model"), "-n", "5000", "-o", str(tmp_path / "parts"),
                     "--engine", "ray", "--block-rows", "2000", "--seed", "3"]) == 0
    assert sorted(p.name for p in (tmp_path / "parts").iterdir()) == [
        "part-000000.parquet", "part-000001.parquet", "part-000002.parquet"]
    assert "wrote 5000 rows in 3 Parquet parts" in capsys.readouterr().out


# ------------------------------------------------------------------ issue 73: types from the domain, the ledger audited
class _Reading:
    """A Python object Arrow cannot hold (Ray pickles it); its text is its value."""

    def __init__(self, value: float) -> None:
        self.value = value

    def __str__(self) -> str:
        return str(self.value)


def test_a_dataset_built_from_python_values_is_typed_from_the_domain(flaky_dir):
    """Issue 73, item 1: ``from_items`` types a column from its values (whole numbers int64, one
    4.5 among them double), a ``from_pandas`` object column of Decimals was refused by the
    schema read (a pandas block schema), and pickled objects came out as an Arrow extension.
    Now each is typed from its declaration as a CSV column is: neighbouring datasets get the
    same schema, or the one whose value does not read as it is a DataError for the curator."""
    import pandas as pd
    from decimal import Decimal

    whole = [{"x": i % 10, "y": i % 2 == 0} for i in range(400)]
    fractional = [*whole[:-1], {"x": 4.5, "y": True}]
    declared = {"x": (0, 10), "y": [False, True]}
    schemas = [RaySource.from_input(ray.data.from_items(rows, override_num_blocks=3), domain=declared).schema
               for rows in (whole, fractional)]
    assert schemas[0] == schemas[1] == pl.Schema({"x": pl.Int64, "y": pl.Boolean})
    domain = polars_rap.Domain.from_mapping(schemas[0], declared)
    queries = build_workload(domain, np.random.default_rng(0), classes=("CM",))
    with pytest.raises(DataError, match=r"column 'x' .*do not read as Int64.*found in a block of"):
        exact_answers(RaySource.from_input(ray.data.from_items(fractional, override_num_blocks=3), domain=declared),
                      domain, queries, get_backend("cpu"))
    here = exact_answers(DataSource.from_input(pl.DataFrame(whole)), domain, queries, get_backend("cpu"))
    on_ray = exact_answers(RaySource.from_input(ray.data.from_items(whole, override_num_blocks=3), domain=declared),
                           domain, queries, get_backend("cpu"))
    assert np.array_equal(on_ray[0], here[0]) and on_ray[1] == here[1]
    floats = {"x": (0.0, 10.0), "y": [False, True]}
    for rows in (whole, fractional):
        source = RaySource.from_input(ray.data.from_items(rows, override_num_blocks=3).map(lambda row: row),
                                      domain=floats)
        assert source.schema == pl.Schema({"x": pl.Float64, "y": pl.Boolean})
    decimals = pd.DataFrame({"x": [Decimal("1.5"), Decimal("2.25")] * 50, "y": [True, False] * 50})
    source = RaySource.from_input(ray.data.from_pandas(decimals), domain=floats)
    assert source.schema == pl.Schema({"x": pl.Float64, "y": pl.Boolean})
    counted = exact_answers(source, polars_rap.Domain.from_mapping(source.schema, floats),
                            build_workload(polars_rap.Domain.from_mapping(source.schema, floats),
                                           np.random.default_rng(0), classes=("CM",)), get_backend("cpu"))
    assert counted[1] == 100
    objects = ray.data.from_items([{"x": _Reading(v / 4), "y": v % 2 == 0} for v in range(40)])
    source = RaySource.from_input(objects, domain=floats)
    assert source.schema == pl.Schema({"x": pl.Float64, "y": pl.Boolean})
    typed_domain = polars_rap.Domain.from_mapping(source.schema, floats)
    assert exact_answers(source, typed_domain, build_workload(typed_domain, np.random.default_rng(0), classes=("CM",)),
                         get_backend("cpu"))[1] == 40


def test_a_ray_run_s_ledger_audits_like_the_in_process_one(flaky_dir, task):
    """Issue 73, item 6: the in-process audit of ``tests/test_audits.py`` (every charged mechanism
    wrapped by a recorder) on a run whose passes go through Ray (AGEP's bounds and OCCP's
    categories inferred from counts per block, then the workload's answers per block, from 7
    blocks): every ledger event is one recorded call, in order, with the call's mechanism, rho and
    delta; the inference is charged first; the spent rho is the fsum of the events and the budget
    to the last float, and their exact rational sum is within it. The same run in this process
    gives the same ledger event for event (descriptions too), the same true answers into the
    same calls and the same released answers. Deterministic."""
    from fractions import Fraction

    from polars_rap.privacy.ledger import split_budget
    from test_audits import RUN_SETTINGS, recorded  # the in-process audit's recorder and settings

    rows = task.frame.sample(3_000, seed=11)
    domain = {**task.domain, "AGEP": "numeric", "OCCP": "categorical"}
    runs = {}
    for where, data in (("here", rows), ("ray", blocks_of(rows, 7))):
        with recorded() as recording:
            runs[where] = (polars_rap.synthesize(data, domain=domain, labels=task.labels, **RUN_SETTINGS), recording)
    budget = split_budget(RUN_SETTINGS["epsilon"], RUN_SETTINGS["delta"], 0.5)
    for result, recording in runs.values():
        report, calls = result.report, recording.calls
        assert len(report.events) == len(calls) > 0
        for index, (event, call) in enumerate(zip(report.events, calls, strict=True)):
            assert (call.events_before, call.events_after) == (index, index + 1)
            assert (event.mechanism, event.rho, event.delta) == (call.mechanism, call.rho, call.delta)
        sites = [call.site for call in calls]
        first = sites.count("inference")  # AGEP's histogram (and search, if it runs), OCCP's threshold
        assert first >= 2 and sites[:first] == ["inference"] * first
        assert report.rho_budget == budget.rho
        assert report.rho_spent == math.fsum(e.rho for e in report.events) == report.rho_budget
        assert sum((Fraction(e.rho) for e in report.events), Fraction(0)) <= Fraction(report.rho_budget)
        assert math.fsum(e.delta for e in report.events) <= report.approximate_delta
    (here, here_recording), (on_ray, ray_recording) = runs["here"], runs["ray"]
    assert [(e.mechanism, e.rho, e.round, e.delta, e.description) for e in on_ray.report.events] == \
           [(e.mechanism, e.rho, e.round, e.delta, e.description) for e in here.report.events]
    assert len(ray_recording.exact) == len(here_recording.exact) == 2  # the real rows, then the returned ones
    assert np.array_equal(ray_recording.exact[0][2], here_recording.exact[0][2])
    assert ray_recording.exact[0][3] == here_recording.exact[0][3] == rows.height
    for ours, theirs in zip(ray_recording.calls, here_recording.calls, strict=True):
        for key in ("values", "scores", "prefixes", "counts"):
            if key in theirs.arguments:
                assert np.array_equal(np.asarray(ours.arguments[key]), np.asarray(theirs.arguments[key]))
    assert on_ray.report.to_dict() == here.report.to_dict()
