"""Oracle-selection probe: measure only the top fraction of tie tables (by the real rows' eta of
x_j by feature a, within label), at half the tie budget (the other half standing in for a
private selection's cost)."""
import dataclasses, math, os
import numpy as np, polars as pl
import polars_rap.pipeline.fitting as fitting
from polars_rap.decode.numeric_ties import layout_of, tables_values, release_ties

FRAC = float(os.environ.get("TOPK_FRAC", "0.125"))
STATE = {}

def eta_score(train, domain, j, a, l):
    spec = domain.numeric_columns[j]
    lo, hi = spec.bounds if hasattr(spec, "bounds") else (spec.lower, spec.upper)
    x = ((pl.col(spec.name).cast(pl.Float64) - lo) / (hi - lo)).fill_null(0.0)
    lab = domain.blocks[l].source
    if a < len(domain.blocks):
        blk = domain.blocks[a]
        feat = pl.col(blk.source).is_null() if blk.indicator else pl.col(blk.source)
    else:
        k = domain.numeric_columns[a - len(domain.blocks)]
        lo2, hi2 = k.bounds if hasattr(k, "bounds") else (k.lower, k.upper)
        feat = (((pl.col(k.name).cast(pl.Float64) - lo2) / (hi2 - lo2)).clip(0, 1) * 8).floor().clip(0, 7)
    f = train.select(x.alias("x"), feat.alias("f"), pl.col(lab).alias("l"))
    between = f.group_by("f", "l").agg(pl.col("x").mean().alias("m"), pl.len().alias("n")).join(
        f.group_by("l").agg(pl.col("x").mean().alias("lm")), on="l")
    return float((between["n"] * (between["m"] - between["lm"]) ** 2).sum() / len(f))  # between-cell variance

def install(train, domain):
    original_fit = fitting.fit_relaxed
    def release(answers, rho, ledger, rng):
        layout = answers.tie_layout
        if layout is None:
            return None
        scores = np.array([eta_score(train, domain, *t) for t in layout.tables])
        k = max(1, math.ceil(FRAC * len(layout.tables)))
        keep = sorted(np.argsort(-scores)[:k])
        tables = [layout.tables[t] for t in keep]
        sub = layout_of(answers_domain(answers), tables, layout.bins)
        sums = tables_values(layout, answers.tie_totals.totals, tables)
        STATE["layout"] = sub
        ledger_rho = 0.5 * rho
        out = release_ties(sums, answers.n_rows, sub, ledger_rho, ledger, rng)
        print("TOPK", len(layout.tables), "->", k, "std", out[1], flush=True)
        return out
    def answers_domain(answers):
        return answers.tie_totals.domain
    def fit(*args, **kw):
        fitted = original_fit(*args, **kw)
        if "layout" in STATE and fitted.tie_release is not None:
            fitted = dataclasses.replace(fitted, tie_layout=STATE["layout"])
        return fitted
    fitting._release_ties = release
    fitting.fit_relaxed = fit
    import polars_rap.pipeline.synthesis as syn
    if hasattr(syn, "fit_relaxed"):
        syn.fit_relaxed = fit
