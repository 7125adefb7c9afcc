import sys, json, time, polars as pl, polars_rap, numpy as np
from polars_rap.io.datasets import load_task, train_test_split
from polars_rap.quality.ml_utility import ml_utility
from polars_rap.fit.planned_strategy import PlannedStrategy
name, eps, seed = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
change = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
t = load_task(name)
train, test = train_test_split(t.frame, seed=0)
res = polars_rap.synthesize(train, epsilon=eps, delta=1/train.height**2, domain=t.domain, labels=t.labels, seed=seed,
                            progress=False, strategy=PlannedStrategy(**change))
dom = res.model.domain
feats = [c for c in dom.columns if c.name not in dom.labels]
cats = [c.name for c in feats if c.is_categorical]; nums = {c.name: (c.lower, c.upper) for c in feats if not c.is_categorical}
categories = {c.name: list(c.categories) for c in feats if c.is_categorical}
lab = t.labels[0]
def f1(frame, cs, ns):
    r = ml_utility(frame, test, lab, categorical=cs, numeric=ns, categories={k: categories[k] for k in cs}, seed=0, model="gradient_boosting")
    return r["macro_f1"]
def shuffled(frame, by):
    rng = np.random.default_rng(0)
    out = frame.with_row_index("_i")
    for n in nums:
        out = out.with_columns(pl.col(n).shuffle(seed=int(rng.integers(1<<30))).over(by))
    return out.drop("_i")
rows = {"all": (cats, nums), "cats only": (cats, {}), "nums only": ([], nums)}
for k, (cs, ns) in rows.items():
    print(f"{name} eps={eps} {k:12s} real {f1(train, cs, ns):.4f}  syn {f1(res.data, cs, ns):.4f}", flush=True)
print(f"{name} eps={eps} nums shuffled within label: real {f1(shuffled(train, lab), cats, nums):.4f}")
