import sys, polars as pl, numpy as np
sys.path.insert(0, "/tmp/probe")
from polars_rap.io.datasets import load_task, train_test_split
from polars_rap.quality.evaluation import workload_errors, numeric_summary
from polars_rap.schema.domain import Domain
import importlib.util

name, path = sys.argv[1], sys.argv[2]
t = load_task(name); train, test = train_test_split(t.frame, seed=0)
dom = Domain.from_mapping(train.schema, t.domain, labels=t.labels)
from polars_rap.fit.numeric_histograms import histogram_edges
from polars_rap.schema.transforms import to_unit, from_unit
def snapped(frame):
    cols = []
    for s in dom.numeric_columns:
        x = frame.get_column(s.name).cast(pl.Float64).to_numpy()
        u = to_unit(x, s); e = histogram_edges(s).astype(np.float64); lo = np.concatenate([[0.0], e[:-1]])
        k = np.minimum(np.searchsorted(e, u, side="left"), e.size - 1)
        y = from_unit((lo[k] + e[k]) / 2, s)
        if s.is_integer: y = np.round(y)
        y = np.where(np.isnan(x), np.nan, y)
        cols.append(pl.Series(s.name, y).fill_nan(None).cast(frame.schema[s.name]))
    return frame.with_columns(cols)
syn = pl.read_parquet(path)
for label, f in [("syn", syn), ("snapped", snapped(syn))]:
    w = workload_errors(train, f, dom, seed=0)
    print(name, label, w if not hasattr(w, "to_dicts") else w.to_dicts(), {k: round(v, 4) for k, v in numeric_summary(train, f, dom).items() if v is not None}, flush=True)
