"""A public table as a prior (issue 19): validation, no budget, its record, its use, the CLI."""

import hashlib
import json
import logging
import re

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap import DataError, ParameterError, kernels
from polars_rap.cli import commands as cli
from polars_rap.schema.domain import Domain
from polars_rap.pipeline.model import FORMAT_VERSION, SyntheticModel
from polars_rap.public.prior import (DEFAULT_PUBLIC_USES, PUBLIC_USES, check_public_use, open_public, read_public,
                                     touches_columns)
from polars_rap.workload.queries import QueryClass
from polars_rap.workload.builders import build_workload

import public_rows  # tests/public_rows.py: the public-table tests' rows, fixtures and run()
from plans import OUTRIGHT  # tests/plans.py
from public_rows import FAST, LABELS, fast, run

declared, domain = public_rows.declared, public_rows.domain  # the shared fixtures: they read COLUMNS
private, public = public_rows.private, public_rows.public

COLUMNS = ["AGEP", "SEX", "MAR", "SCHL", "RAC1P", "PINCP_gt_50000"]
RECORD_KEYS = {"rows", "sha256", "columns", "filled_columns", "uses", "rho_charged"}


# ------------------------------------------------------------------ validation
def test_a_value_outside_the_domain_is_a_data_error_naming_the_column_and_the_fix(private, declared):
    bad = private.head(200).with_columns(pl.when(pl.int_range(pl.len()) == 5).then(3).otherwise(pl.col("SEX"))
                                         .cast(pl.Int32).alias("SEX"))
    with pytest.raises(DataError, match=r"the public table: column 'SEX' holds 1 values outside its declared "
                                        r"categories, e\.g\. \[3\]\. Add them to the column's category list"):
        run(private, declared, public=bad)


def test_an_undeclared_null_in_the_public_table_is_a_data_error_naming_the_column(private, declared):
    bad = private.head(50).with_columns(pl.lit(None, dtype=pl.Int32).alias("MAR"))
    with pytest.raises(DataError, match=r"the public table: column 'MAR' holds 50 nulls.*Add None to its categories"):
        run(private, declared, public=bad)


def test_a_column_the_data_lacks_is_a_data_error_that_says_to_drop_it(private, declared):
    extra = private.head(50).with_columns(pl.lit(1).alias("ST"))
    with pytest.raises(DataError, match=r"the public table has columns the synthesized data does not: \['ST'\].*"
                                        r"public\.drop\(\['ST'\]\), or add them to drop=\['ST'\]"):
        run(private, declared, public=extra)


def test_drop_leaves_its_columns_out_of_both_tables(private, public, declared):
    """The data's extra columns and the public table's, in one list: the same release as with
    both tables narrowed by hand. A name neither table holds is refused, naming it."""
    narrow = run(private, declared, public=public)
    wide = private.with_columns(person_id=pl.int_range(pl.len()))
    wide_public = public.with_columns(ST=pl.lit(6), person_id=pl.int_range(pl.len()))
    dropped = run(wide, declared, public=wide_public, drop=["person_id", "ST"])
    assert dropped.data.equals(narrow.data) and dropped.report.public_data == narrow.report.public_data
    with pytest.raises(ParameterError, match=r"names columns neither the data nor the public table has: \['STT'\]"):
        run(wide, declared, public=wide_public, drop=["person_id", "STT"])


def test_a_public_table_without_rows_or_shared_columns_is_refused(private, declared):
    with pytest.raises(DataError, match="the public table has no rows"):
        run(private, declared, public=private.clear())
    with pytest.raises(DataError, match="the public table has none of the data's columns"):
        open_public(pl.DataFrame(), None, COLUMNS)


def test_a_subset_of_columns_is_filled_from_the_domain_and_logged(private, public, declared, caplog):
    with caplog.at_level(logging.INFO, logger="polars_rap.public.prior"):
        result = run(private, declared, public=public.drop("MAR", "AGEP"))
    assert "columns ['AGEP', 'MAR'] are missing from it and filled from the domain uniformly" in caplog.text
    record = result.report.public_data
    assert record["filled_columns"] == ["AGEP", "MAR"]
    assert record["columns"] == ["SEX", "SCHL", "RAC1P", "PINCP_gt_50000"]
    assert result.data.schema == private.schema


def test_public_settings_are_checked(private, declared):
    with pytest.raises(ParameterError, match="'public_use' parameter must name at least one of.*did you mean 'labels'"):
        run(private, declared, public=private, public_use=["label"])
    with pytest.raises(ParameterError, match="'public_use' parameter needs a public table"):
        run(private, declared, public_use=["init"])
    with pytest.raises(TypeError, match="'public' parameter must be a polars DataFrame"):
        run(private, declared, public=42)
    with pytest.raises(FileNotFoundError):
        run(private, declared, public="/no/such/public.parquet")
    assert check_public_use(private, None) == DEFAULT_PUBLIC_USES == ("init",)
    assert check_public_use(private, "margins") == ("margins",)


@pytest.mark.parametrize(("use", "why"), [
    ("fit", r"CM 0\.99x and MM 1\.10x .* at 8\.6x its time \(bench/results/public_prior\.md\)"),
    ("targets", r"James-Stein .* raised MM 1\.61x and LT 2\.15x at eps = 0\.25 \(bench/results/public_prior\.md\)"),
    ("selection", r"first selection against the public answers was never measured to gain"),
])
def test_a_removed_use_is_a_parameter_error_saying_why_and_what_remains(use, why):
    """A use removed in #72 is named, with its measured figure, and the uses left are listed."""
    with pytest.raises(ParameterError) as caught:
        check_public_use("public.parquet", ["init", use])
    message = str(caught.value)
    assert re.search(rf"names a removed use: '{use}' was removed: .*{why}\. The remaining uses are ", message), message
    assert message.endswith(str(list(PUBLIC_USES))) and use not in PUBLIC_USES


# ------------------------------------------------------------------ privacy: free, recorded, never its rows
def test_the_public_table_charges_nothing_the_ledger_is_the_same_to_the_last_float(private, public, declared):
    """A fixed plan's ledger is the same event for event with or without a public table; the
    default's annealed rounds set their budgets from what they release, so only its total and
    its kinds of events are the same."""
    without = run(private, declared, strategy=OUTRIGHT).report
    for uses in (["init"], ["init", "interactions"]):
        with_public = run(private, declared, public=public, public_use=uses, strategy=OUTRIGHT).report
        assert [(e.mechanism, e.rho, e.round, e.delta) for e in with_public.events] == \
               [(e.mechanism, e.rho, e.round, e.delta) for e in without.events]
        assert with_public.rho_spent == without.rho_spent == with_public.rho_budget
        assert with_public.public_data["rho_charged"] == 0.0
    assert without.public_data is None
    default = run(private, declared).report
    with_public = run(private, declared, public=public, public_use=["init", "interactions"]).report
    assert with_public.rho_spent == default.rho_spent == default.rho_budget == with_public.rho_budget
    assert {e.mechanism for e in with_public.events} == {e.mechanism for e in default.events}
    assert with_public.public_data["rho_charged"] == 0.0


def test_the_report_records_row_count_and_content_hash_never_rows(private, public, declared, domain, tmp_path):
    result = run(private, declared, public=public, public_use=["init", "interactions"], strategy=OUTRIGHT)
    record = result.report.public_data
    assert set(record) == RECORD_KEYS
    assert record["rows"] == public.height and record["uses"] == ["init", "interactions"]
    assert len(record["sha256"]) == 64 and int(record["sha256"], 16) >= 0
    assert f"public prior: {public.height:,} rows (sha256 {record['sha256'][:12]}" in result.report.summary()
    # the same content read as a frame, a LazyFrame or a file has one hash; other content another
    path = tmp_path / "public.parquet"
    public.write_parquet(path)
    hashes = {read_public(open_public(source, declared, COLUMNS), domain).sha256
              for source in (public, public.lazy(), str(path))}
    assert hashes == {record["sha256"]}
    assert read_public(open_public(public.head(100), declared, COLUMNS), domain).sha256 != record["sha256"]
    # only that record: the summary and the whole report are no larger than without a public table
    plain = run(private, declared, strategy=OUTRIGHT).report
    assert len(json.dumps(result.report.public_data)) < 600
    assert result.report.measurements.height == plain.measurements.height


def test_saved_models_carry_the_record_and_a_format_2_model_still_loads(private, public, declared, tmp_path):
    result = run(private, declared, public=public, public_use=["init"])
    saved = result.save(tmp_path / "model")
    manifest = json.loads((saved / "manifest.json").read_text())
    assert manifest["format_version"] == FORMAT_VERSION and manifest["public_data"] == result.report.public_data
    assert set(manifest["public_data"]) == RECORD_KEYS
    loaded = polars_rap.load(saved)
    assert loaded.report.public_data == result.report.public_data
    assert "public prior: 1,200 rows" in loaded.report.summary()
    # format 2 (before issue 19): no record in the manifest or the report; it loads, without one
    summary = json.loads((saved / "report.json").read_text())
    del summary["public_data"]
    data = json.dumps(summary).encode()
    (saved / "report.json").write_bytes(data)
    for entry in manifest["files"]:
        if entry["name"] == "report.json":
            entry.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    del manifest["public_data"]
    manifest["format_version"] = 2
    (saved / "manifest.json").write_text(json.dumps(manifest))
    old = polars_rap.load(saved)
    assert old.format_version == 2 and old.report.public_data is None


# ------------------------------------------------------------------ the prior is used
def test_initial_relaxed_rows_are_softened_public_rows(public, domain):
    table = read_public(open_public(public, None, COLUMNS), domain)
    params = table.relaxed_params(500, domain, np.random.default_rng(0))
    relaxed = params.relaxed()
    start = 0
    for b, size in enumerate(domain.block_sizes):
        block = relaxed[:, start:start + size]
        assert np.allclose(block.sum(axis=1), 1.0, atol=1e-5)
        assert np.allclose(block.max(axis=1), 0.95 + 0.05 / size, atol=1e-5)  # softened one-hot
        shares = np.bincount(block.argmax(axis=1), minlength=size) / 500
        public_shares = np.bincount(table.codes[:, b], minlength=size) / table.n_rows
        assert np.abs(shares - public_shares).max() < 0.08  # a 500-row sample of 1,200 rows
        start += size
    ages = relaxed[:, domain.n_categorical_coords]
    assert set(np.round(ages, 6)) <= set(np.round(table.numerics[:, 0].astype(np.float32), 6))


def test_a_column_no_query_measures_keeps_the_public_tables_distribution(private, public, declared):
    """With no categorical marginal measured (no CM rounds, no base marginals), nothing but the
    starting point shapes SEX: the public table's (all 2 here), not the uniform start's."""
    skewed = public.with_columns(pl.lit(2, dtype=pl.Int32).alias("SEX"))
    options = dict(epsilon=0.3, strategy=fast(OUTRIGHT, rounds={**FAST["rounds"], "CM": 0}), progress=False)
    with_public = polars_rap.synthesize(private, delta=1e-7, domain=declared, labels=LABELS, seed=0,
                                        public=skewed, public_use=["init"], **options)
    without = polars_rap.synthesize(private, delta=1e-7, domain=declared, labels=LABELS, seed=0, **options)
    assert (with_public.data["SEX"] == 2).mean() > 0.9
    assert 0.3 < (without.data["SEX"] == 2).mean() < 0.7


def test_a_wrong_public_table_loses_to_the_measurements(private, public, declared):
    """A start from the public rows is only a start: at a large epsilon the marginals over a
    column the public table gets wrong follow the measurements."""
    wrong = public.with_columns(pl.lit(2, dtype=pl.Int32).alias("SEX"))
    result = polars_rap.synthesize(private, epsilon=8.0, delta=1e-7, domain=declared, labels=LABELS, seed=0,
                                   public=wrong, public_use=["init"], strategy=fast(), progress=False)
    share = (result.data["SEX"] == 2).mean()
    assert abs(share - (private["SEX"] == 2).mean()) < 0.1, share


def test_public_answers_exist_only_for_queries_over_columns_the_table_holds(public, domain):
    queries = build_workload(domain, np.random.default_rng(0), classes=("CM", "MM", "LT"),
                             n_mixed_marginals=20, n_linear_thresholds=30, max_marginal_cells=None)
    backend = kernels.get_backend("cpu")
    full = read_public(open_public(public, None, COLUMNS), domain)
    answers = full.answers(queries, domain, backend)
    assert not np.isnan(answers).any()
    assert np.allclose(answers, backend.answers_exact(full.codes, full.numerics, queries))
    partial = read_public(open_public(public.drop("MAR"), None, COLUMNS), domain)
    answers = partial.answers(queries, domain, backend)
    mar = domain.block_index("MAR")
    reads_mar = np.array([mar in queries.coord_column[queries.cat_coords[a:b]]
                          for a, b in zip(queries.cat_offsets[:-1], queries.cat_offsets[1:], strict=True)])
    assert np.array_equal(np.isnan(answers), reads_mar)
    assert np.array_equal(touches_columns(queries, partial.filled_blocks, partial.filled_numeric), reads_mar)
    lt = queries.query_class == QueryClass.LINEAR_THRESHOLD  # every LT query reads AGEP, the one numeric
    assert touches_columns(queries, np.zeros(len(domain.blocks), bool), np.ones(1, bool))[lt].all()


# ------------------------------------------------------------------ entry points
def test_the_namespaces_pass_the_public_table(private, public, declared):
    options = dict(epsilon=1.0, delta=1e-7, domain=declared, labels=LABELS, seed=0, strategy=fast(), progress=False)
    eager = private.dp.synthesize(public=public, **options)
    lazy = private.lazy().dp.synthesize(public=public.lazy(), **options)
    assert eager.report.public_data == lazy.report.public_data
    assert eager.report.public_data["rows"] == public.height


def test_cli_config_key_and_flag(private, public, declared, tmp_path, capsys):
    folder = tmp_path / "configs"
    folder.mkdir()
    private.write_parquet(tmp_path / "private.parquet")
    public.write_parquet(folder / "public.parquet")
    public.head(300).write_parquet(tmp_path / "other.parquet")
    tables = "\n".join(
        f"[domain.{name}]\nkind = \"numeric\"\nbounds = {list(declared[name])}" if isinstance(declared[name], tuple)
        else f"[domain.{name}]\nkind = \"categorical\"\ncategories = {json.dumps(declared[name])}"
        for name in COLUMNS)
    options = ('[options]\npublic_use = ["init", "interactions"]\n[strategy]\nrelaxed_rows = 60\n'
               '[strategy.rounds]\nLT = 2\n[strategy.workload]\nn_linear_thresholds = 100\n'
               '[strategy.projection]\nmax_steps = 5\n')
    config = folder / "spec.toml"
    config.write_text(f'labels = {json.dumps(LABELS)}\npublic = "public.parquet"\n\n{tables}\n{options}')

    def synthesize(config_path, *flags):
        return cli.main(["synthesize", str(tmp_path / "private.parquet"), "-o", str(tmp_path / "out.parquet"),
                         "--epsilon", "1", "--delta", "1e-7", "--config", str(config_path), "--seed", "0",
                         "--json", "--quiet", "--overwrite", *flags])

    capsys.readouterr()
    assert synthesize(config) == 0  # public.parquet is found beside the config, not in the working directory
    record = json.loads(capsys.readouterr().out)["public_data"]
    assert record["rows"] == public.height and record["uses"] == ["init", "interactions"]
    assert synthesize(config, "--public", str(tmp_path / "other.parquet")) == 0  # the flag wins
    assert json.loads(capsys.readouterr().out)["public_data"]["rows"] == 300
    misplaced = tmp_path / "misplaced.toml"
    misplaced.write_text(f"labels = {json.dumps(LABELS)}\n\n{tables}\n"
                         + options.replace("[options]\n", '[options]\npublic = "public.parquet"\n'))
    assert synthesize(misplaced) == 2
    assert "set 'public' with the top-level public = \"path\"" in capsys.readouterr().err
    bad = tmp_path / "bad.parquet"
    public.head(20).with_columns(pl.lit(9, dtype=pl.Int32).alias("SEX")).write_parquet(bad)
    assert synthesize(config, "--public", str(bad)) == 3
    assert "the public table: column 'SEX'" in capsys.readouterr().err
    # a removed use: the config's public_use reaches synthesize's ParameterError (exit 2), before a row is read
    config.write_text(config.read_text().replace('public_use = ["init", "interactions"]', 'public_use = ["targets"]'))
    assert synthesize(config) == 2
    assert "'targets' was removed: James-Stein targets" in capsys.readouterr().err
    # public_use "labels": the saved model keeps the label model, and `sample` draws labels from it
    config.write_text(config.read_text().replace('public_use = ["targets"]', 'public_use = ["labels"]'))
    assert synthesize(config, "--model", str(tmp_path / "model")) == 0
    record = json.loads(capsys.readouterr().out)["public_data"]
    assert record["uses"] == ["labels"] and record["label_ridge"] > 0
    assert (tmp_path / "model" / "label_model.arrow").is_file()
    assert cli.main(["sample", str(tmp_path / "model"), "-n", "400", "-o", str(tmp_path / "more.parquet"),
                     "--seed", "1"]) == 0
    loaded = polars_rap.load(tmp_path / "model")
    more = pl.read_parquet(tmp_path / "more.parquet")
    assert more.equals(loaded.sample(400, seed=1))
    unlabelled = SyntheticModel(loaded.relaxed, loaded.domain, loaded.report).sample(400, seed=1)
    # the labels redrawn, the numerics (AGEP) permuted within the new labels: the categories are the same
    assert more.drop([*LABELS, "AGEP"]).equals(unlabelled.drop([*LABELS, "AGEP"])) and not more.equals(unlabelled)
    # public_use "reweight": its check is in the ledger the JSON summary reports, its outcome in the record
    config.write_text(config.read_text().replace('public_use = ["labels"]', 'public_use = ["reweight"]'))
    capsys.readouterr()
    assert synthesize(config) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["public_data"]["reweight_released"] in ("synthetic rows", "reweighted public rows")
    assert summary["public_data"]["reweight_check_rho"] > 0
    # public_use "margins": what its margins and checks charged is in the record, never a margin's value
    config.write_text(config.read_text().replace('public_use = ["reweight"]', 'public_use = ["margins"]'))
    assert synthesize(config) == 0
    record = json.loads(capsys.readouterr().out)["public_data"]
    assert record["uses"] == ["margins"] and record["margins_check_rho"] > 0 and record["margins_rho"] > 0
    assert isinstance(record["margins_check_passed"], bool)
