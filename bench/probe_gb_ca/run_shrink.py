"""#74 probe: a default fit with the margin shrink installed; GB / LR macro F1 and workload errors."""
import sys, json, os
sys.path.insert(0, os.path.dirname(__file__))
import polars_rap
from polars_rap.io.datasets import load_task, train_test_split
from polars_rap.schema.domain import Domain
import polars_rap.quality.evaluation as ev
import shrink
if os.environ.get("SHRINK", "1") == "1":
    shrink.install()
if os.environ.get("MAX_BINS"):
    import polars_rap.fit.numeric_histograms as nh
    nh.DEFAULT_MAX_BINS = int(os.environ["MAX_BINS"])
for name in sys.argv[1].split(","):
    task = load_task(name, data_dir="/work/shared/data")
    train, test = train_test_split(task.frame, seed=0)
    domain = Domain.from_mapping(train.schema, task.domain, task.labels)
    label = task.labels[0]
    for eps in [float(e) for e in sys.argv[2].split(",")]:
        for seed in [int(s) for s in sys.argv[3].split(",")]:
            shrink.LOG.clear()
            res = polars_rap.synthesize(train, epsilon=eps, delta=1 / train.height ** 2, domain=task.domain,
                                        labels=task.labels, seed=seed, progress=False)
            w = {r["query_class"]: r["mean_error"] for r in ev.workload_errors(train, res.data, domain, seed=0).iter_rows(named=True)}
            gb = ev.ml_utility_for_domain(res.data, test, label, domain, model="gradient_boosting")["macro_f1"]
            lr = ev.ml_utility_for_domain(res.data, test, label, domain)["macro_f1"]
            ks = ev.numeric_summary(train, res.data, domain)["numeric_ks_mean"]
            print(json.dumps(dict(shrink=os.environ.get("SHRINK", "1"), bins=os.environ.get("MAX_BINS", "200"), classes=sorted(shrink.CLASSES), dataset=name, eps=eps, seed=seed, gb=round(gb, 4), lr=round(lr, 4), ks=round(ks, 4),
                                  **{k: round(v, 5) for k, v in w.items()}, factors=[f for _, f in shrink.LOG][:40])), flush=True)
