"""#74 probe: merged cells x label (at SHARE of the histograms' budget) for the label's share by
range, plus each numeric column's fine histogram pooled over the labels (the rest of the budget,
flat Gaussian, emulated outside the ledger) used to place decoded values within a merged cell."""
import sys, os, json, importlib.util
import numpy as np, polars as pl
import polars_rap
from polars_rap.io.datasets import load_task, train_test_split
from polars_rap.schema.domain import Domain
from polars_rap.schema.transforms import to_unit, from_unit
import polars_rap.quality.evaluation as ev
import polars_rap.fit.numeric_histograms as nh
import polars_rap.fit.loop as loop
import polars_rap.decode.histogram_margins as hm

SHARE = float(os.environ.get("SHARE", "0.5"))
spec_ = importlib.util.spec_from_file_location("nh_merged", os.path.join(os.path.dirname(__file__), "nh_merged.py"))
nm = importlib.util.module_from_spec(spec_); sys.modules["nh_merged"] = nm; spec_.loader.exec_module(nm)
_real_gauss, _real_merged = nm.gaussian_mechanism, nm.merged_cells
nm.gaussian_mechanism = lambda values, l2, rho, ledger, rng, *a, **k: _real_gauss(values, l2, rho * SHARE, ledger, rng, *a, **k)
nm.merged_cells = lambda n, L, rows, rho: _real_merged(n, L, rows, rho * SHARE)
if os.environ.get("MODE", "pooled") != "default":
    loop.measure_histograms = nm.measure_histograms
    hm.histogram_runs = nm.histogram_runs


def pooled_redraw(real, synth, domain, res, rng):
    """Each numeric value redrawn within its released merged cell from the noisy pooled fine histogram."""
    nh_rho = {int(e.description.split("numeric column ")[1].split(" ")[0]): e.rho for e in res.report.events
              if e.description.startswith("NH histogram")}
    margins = res.histogram_margins
    out = synth
    n = real.height
    for h, j in enumerate(margins.columns):
        spec = domain.numeric_columns[j]
        fine = nh.histogram_edges(spec).astype(np.float64)
        merged = np.asarray(margins.edges[h], dtype=np.float64)
        rho_pool = nh_rho[j] * (1 - SHARE) / SHARE
        u_real = to_unit(real[spec.name].drop_nulls().to_numpy().astype(np.float64), spec)
        counts = np.bincount(np.searchsorted(fine.astype(np.float32), u_real.astype(np.float32), side="left"),
                             minlength=len(fine))[:len(fine)]
        sigma = np.sqrt(2.0) / (n * np.sqrt(2.0 * rho_pool))
        noisy = np.clip(counts / n + rng.normal(0, sigma, len(fine)), 0, None)
        values = synth[spec.name].to_numpy().astype(np.float64)
        ok = ~np.isnan(values)
        u = to_unit(values[ok], spec)
        cell = np.minimum(np.searchsorted(merged.astype(np.float32), u.astype(np.float32), side="left"), len(merged) - 1)
        lows = np.concatenate([[0.0], merged[:-1]])
        new_u = u.copy()
        fine_lo = np.concatenate([[0.0], fine[:-1]])
        for c in np.unique(cell):
            inside = np.flatnonzero((fine > lows[c] + 1e-9) & (fine <= merged[c] + 1e-9))
            if len(inside) <= 1:
                continue
            p = noisy[inside]
            p = p / p.sum() if p.sum() > 0 else np.full(len(inside), 1 / len(inside))
            rows = np.flatnonzero(cell == c)
            pick = inside[rng.choice(len(inside), size=len(rows), p=p)]
            new_u[rows] = fine_lo[pick] + rng.random(len(rows)) * (fine[pick] - fine_lo[pick])
        v = from_unit(new_u, spec)
        if spec.is_integer:
            v = np.rint(v)
        values[ok] = v
        out = out.with_columns(pl.Series(spec.name, values, nan_to_null=True).cast(synth.schema[spec.name]))
    return out


for name in sys.argv[1].split(","):
    task = load_task(name, data_dir="/work/shared/data")
    train, test = train_test_split(task.frame, seed=0)
    domain = Domain.from_mapping(train.schema, task.domain, task.labels)
    label = task.labels[0]
    for eps in [float(e) for e in sys.argv[2].split(",")]:
        for seed in [int(s) for s in sys.argv[3].split(",")]:
            res = polars_rap.synthesize(train, epsilon=eps, delta=1 / train.height ** 2, domain=task.domain,
                                        labels=task.labels, seed=seed, progress=False)
            data = res.data
            if os.environ.get("MODE", "pooled") == "pooled":
                data = pooled_redraw(train, data, res.domain, res, np.random.default_rng([seed, 99]))
            w = {r["query_class"]: r["mean_error"] for r in ev.workload_errors(train, data, domain, seed=0).iter_rows(named=True)}
            gb = ev.ml_utility_for_domain(data, test, label, domain, model="gradient_boosting")["macro_f1"]
            lr = ev.ml_utility_for_domain(data, test, label, domain)["macro_f1"]
            ks = ev.numeric_errors(train, data, domain)
            print(json.dumps(dict(mode=os.environ.get("MODE", "pooled"), share=SHARE, dataset=name, eps=eps, seed=seed,
                                  gb=round(gb, 4), lr=round(lr, 4), ks=round(float(ks["ks_distance"].mean()), 4),
                                  ks_cols={r["column"]: round(r["ks_distance"], 3) for r in ks.iter_rows(named=True)},
                                  **{k: round(v, 5) for k, v in w.items()},
                                  cells=[e.description.split("(")[1].split(" cells")[0] for e in res.report.events if e.description.startswith("NH")])), flush=True)
