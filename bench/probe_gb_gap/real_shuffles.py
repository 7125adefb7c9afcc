import sys, polars as pl, numpy as np
from polars_rap.io.datasets import load_task, train_test_split
from polars_rap.quality.ml_utility import ml_utility
from polars_rap.schema.domain import Domain
name = sys.argv[1]
t = load_task(name)
train, test = train_test_split(t.frame, seed=0)
lab = t.labels[0]
spec = t.domain
cats = [c for c, v in spec.items() if c != lab and isinstance(v, list)]
nums = {c: (v if isinstance(v, tuple) else tuple(v["bounds"])) for c, v in spec.items() if c != lab and not isinstance(v, list)}
categories = {c: spec[c] for c in cats}
def f1(frame, cs, ns):
    return ml_utility(frame, test, lab, categorical=cs, numeric=ns, categories={k: categories[k] for k in cs}, seed=0, model="gradient_boosting")["macro_f1"]
def shuf(frame, cols, by, seed=0):
    return frame.with_columns([pl.col(n).shuffle(seed=seed + i).over(by) for i, n in enumerate(cols)])
print(name, "nums only real", round(f1(train, [], nums), 4))
print(name, "nums only, each shuffled within label", round(f1(shuf(train, list(nums), lab), [], nums), 4))
for n in nums:
    print(name, f"nums only, {n} shuffled within label", round(f1(shuf(train, [n], lab), [], nums), 4))
print(name, "all, nums shuffled within label", round(f1(shuf(train, list(nums), lab), cats, nums), 4))
for c in cats:
    print(name, f"all, nums shuffled within label x {c}", round(f1(shuf(train, list(nums), [lab, c]), cats, nums), 4))
