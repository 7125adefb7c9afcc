"""#74 probe: save rap++'s and AIM at rho's (fixed sampler) synthetic rows on acs-income-CA."""
import sys, json, tempfile
from pathlib import Path
import polars as pl
import polars_rap
from polars_rap.io.datasets import load_task, train_test_split
from polars_rap.schema.domain import Domain
import polars_rap.quality.evaluation as ev

OUT = Path("/work/probe_rows"); OUT.mkdir(exist_ok=True)
what, eps, seeds = sys.argv[1], float(sys.argv[2]), [int(s) for s in sys.argv[3].split(",")]
task = load_task("acs-income-CA", data_dir="/work/shared/data")
train, test = train_test_split(task.frame, seed=0)
domain = Domain.from_mapping(train.schema, task.domain, task.labels)
label = task.labels[0]
delta = 1 / train.height ** 2
for seed in seeds:
    if what == "rap":
        data = polars_rap.synthesize(train, epsilon=eps, delta=delta, domain=task.domain, labels=task.labels,
                                     seed=seed, progress=False).data
    else:
        from bench.peers import run_peer
        with tempfile.TemporaryDirectory() as wd:
            r = run_peer("aim-replace-one", train, task.domain, eps, delta, seed, 30, train.height, 7200, Path(wd),
                         also_fixed_sampler=True)
        print(r.status, r.seconds, r.message[-500:], flush=True)
        data = r.fixed_data.select(train.columns).cast(dict(train.schema))
    path = OUT / f"{what}_eps{eps:g}_s{seed}.parquet"
    data.write_parquet(path)
    gb = ev.ml_utility_for_domain(data, test, label, domain, model="gradient_boosting")["macro_f1"]
    print(json.dumps(dict(what=what, eps=eps, seed=seed, gb=gb, path=str(path))), flush=True)
