import sys, json, polars as pl, polars_rap, numpy as np
from polars_rap.io.datasets import load_task, train_test_split
from polars_rap.quality.ml_utility import ml_utility
from polars_rap.fit.planned_strategy import PlannedStrategy
name, eps, seed = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
change = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
t = load_task(name)
train, test = train_test_split(t.frame, seed=0)
res = polars_rap.synthesize(train, epsilon=eps, delta=1/train.height**2, domain=t.domain, labels=t.labels, seed=seed,
                            progress=False, strategy=PlannedStrategy(**change))
res.data.write_parquet(f"/tmp/probe/syn_{name}_{eps}_{seed}.parquet")
dom = res.model.domain
lab = t.labels[0]
feats = [c for c in dom.columns if c.name not in dom.labels]
nums = {c.name: (c.lower, c.upper) for c in feats if not c.is_categorical}
def f1(frame, ns):
    return ml_utility(frame, test, lab, categorical=[], numeric=ns, categories={}, seed=0, model="gradient_boosting")["macro_f1"]
for n in nums:
    r = train.get_column(n).drop_nulls(); s = res.data.get_column(n).drop_nulls()
    print(f"{name} {eps} {n:16s} real {f1(train, {n: nums[n]}):.4f} syn {f1(res.data, {n: nums[n]}):.4f}  distinct real {r.n_unique()} syn {s.n_unique()}", flush=True)
