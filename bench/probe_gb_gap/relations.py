import sys, json, time, polars as pl, polars_rap, numpy as np
from polars_rap.io.datasets import load_task, train_test_split
from polars_rap.quality.relations import category_relations, relation_summary
from polars_rap.quality.ml_utility import ml_utility_for_domain
from polars_rap.fit.planned_strategy import PlannedStrategy
name, eps, seed = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
change = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
t = load_task(name)
train, test = train_test_split(t.frame, seed=0)
delta = 1 / train.height**2
t0 = time.time()
res = polars_rap.synthesize(train, epsilon=eps, delta=delta, domain=t.domain, labels=t.labels, seed=seed, progress=False,
                            strategy=PlannedStrategy(**change))
dom = res.model.domain
s = relation_summary(train, res.data, dom)
print(name, eps, seed, change, f"{time.time()-t0:.1f}s", {k: round(v, 4) if isinstance(v, float) else v for k, v in s.items()})
if "--pairs" in sys.argv:
    rel = category_relations(train, res.data, dom)
    with pl.Config(tbl_rows=200, tbl_width_chars=200):
        print(rel.sort(rel.columns[2], descending=True).head(20))
if "--gb" in sys.argv:
    for model in ("gradient_boosting",):
        r = ml_utility_for_domain(res.data, test, t.labels[0], dom, seed=0, model=model)
        print("GB", {k: v for k, v in r.items() if "f1" in k})
