import polars as pl, numpy as np
from polars_rap.io.datasets import load_task, train_test_split
from polars_rap.quality.ml_utility import ml_utility
t = load_task("adult"); train, test = train_test_split(t.frame, seed=0); lab = t.labels[0]
rng = np.random.default_rng(0)
for col, b in [("capital-gain", (0, 99999)), ("capital-loss", (0, 4356))]:
    x = train.get_column(col).to_numpy().astype(float)
    def f1(v):
        fr = train.with_columns(pl.Series(col, v))
        return ml_utility(fr, test, lab, categorical=[], numeric={col: b}, categories={}, seed=0, model="gradient_boosting")["macro_f1"]
    print(col, "real", round(f1(x), 4))
    for cells in (200, 1000, 4000):
        w = (b[1] - b[0]) / cells
        k = np.floor((x - b[0]) / w); k = np.minimum(k, cells - 1)
        v = np.where(x == 0, 0.0, b[0] + (k + rng.random(x.size)) * w)
        print(col, cells, "cells, uniform within (0 kept)", round(f1(v), 4), "distinct", np.unique(v).size)
        v = np.where(x == 0, 0.0, b[0] + (k + 0.5) * w)
        print(col, cells, "cells, midpoint (0 kept)", round(f1(v), 4), "distinct", np.unique(v).size)
