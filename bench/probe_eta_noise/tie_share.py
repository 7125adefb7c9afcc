import sys, polars as pl, polars_rap
from polars_rap.io.datasets import load_task, train_test_split
from polars_rap.quality.relations import relation_summary
from polars_rap.schema.domain import Domain
import polars_rap.quality.evaluation as ev
name = sys.argv[1]
task = load_task(name, data_dir="/work/shared/data")
train, test = train_test_split(task.frame, seed=0)
domain = Domain.from_mapping(train.schema, task.domain, task.labels)
for share in [float(x) for x in sys.argv[2].split(",")]:
    res = polars_rap.synthesize(train, epsilon=1.0, delta=1/train.height**2, domain=task.domain, labels=task.labels, seed=0,
                                progress=False, strategy={"name": "planned", "tie_share": share})
    r = relation_summary(train, res.data, domain)
    gb = ev.ml_utility_for_domain(res.data, test, task.labels[0], domain, model="gradient_boosting")["macro_f1"]
    print(f"{name} tie_share={share} eta_mean={r['eta_kept_mean']:.3f} eta_min={r['eta_kept_min']:.3f} gb={gb:.4f}", flush=True)
