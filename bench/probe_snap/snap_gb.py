import sys, polars as pl, numpy as np
from polars_rap.io.datasets import load_task, train_test_split
from polars_rap.quality.ml_utility import ml_utility_for_domain
from polars_rap.fit.numeric_histograms import histogram_edges
from polars_rap.schema.transforms import to_unit, from_unit
from polars_rap.schema.domain import Domain
name, path, MAXB = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = load_task(name); train, test = train_test_split(t.frame, seed=0); lab = t.labels[0]
dom = Domain.from_mapping(train.schema, t.domain, labels=t.labels)
syn = pl.read_parquet(path)
def snapped(frame):
    cols = []
    for spec in dom.numeric_columns:
        x = frame.get_column(spec.name).cast(pl.Float64).to_numpy()
        u = to_unit(x, spec)
        edges = histogram_edges(spec, MAXB).astype(np.float64)
        lo = np.concatenate([[0.0], edges[:-1]])
        k = np.minimum(np.searchsorted(edges, u, side="left"), edges.size - 1)
        y = from_unit((lo[k] + edges[k]) / 2, spec)
        if spec.is_integer:
            y = np.round(y)
        y = np.where(np.isnan(x), np.nan, y)
        cols.append(pl.Series(spec.name, y).fill_nan(None).cast(frame.schema[spec.name]))
    return frame.with_columns(cols)
for mode, frame in [("syn", syn), ("syn snapped", snapped(syn))]:
    out = [round(ml_utility_for_domain(frame, test, lab, dom, seed=0, model=m)["macro_f1"], 4) for m in ("logistic", "gradient_boosting", "random_forest")]
    print(name, MAXB, f"{mode:12s} LR/GB/RF", out, flush=True)
