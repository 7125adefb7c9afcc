"""#74 probe: L1 error of each feature x label margin (numerics in 20 equal-count bins of the real rows)."""
import sys
import numpy as np, polars as pl
from polars_rap.io.datasets import load_task, train_test_split

task = load_task("acs-income-CA")
train, _ = train_test_split(task.frame, seed=0)
label = task.labels[0]
tables = {p.split("/")[-1].removesuffix(".parquet"): pl.read_parquet(p) for p in sys.argv[1:]}
features = [c for c in train.columns if c != label]

def key(frame, c):
    s = frame[c]
    if c in ("AGEP", "JWMNP"):
        edges = np.unique(np.quantile(train[c].drop_nulls().to_numpy(), np.linspace(0, 1, 21)[1:-1]))
        return pl.Series(np.searchsorted(edges, s.fill_null(-1).to_numpy(), side="right")).cast(pl.String)
    return s.cast(pl.String).fill_null("∅")

def margin(frame, c):
    return pl.DataFrame({"a": key(frame, c), "y": frame[label].cast(pl.String)}).group_by("a", "y").len().with_columns(
        pl.col("len") / frame.height)

print("| feature | cells | " + " | ".join(tables) + " |"); print("|---" * (len(tables) + 2) + "|")
tot = {k: 0.0 for k in tables}
for c in features:
    r = margin(train, c)
    out = []
    for k, v in tables.items():
        j = r.join(margin(v, c), on=["a", "y"], how="full", coalesce=True).fill_null(0)
        l1 = float((j["len"] - j["len_right"]).abs().sum()); tot[k] += l1; out.append(l1)
    print(f"| {c} | {r.height} | " + " | ".join(f"{x:.4f}" for x in out) + " |")
print("| sum | | " + " | ".join(f"{tot[k]:.4f}" for k in tables) + " |")

def mi(frame, c):
    d = pl.DataFrame({"a": key(frame, c), "y": frame[label].cast(pl.String)})
    n = d.height
    j = d.group_by("a", "y").len("n").join(d.group_by("a").len("na"), on="a").join(d.group_by("y").len("ny"), on="y")
    return float((j["n"] / n * np.log(j["n"] * n / (j["na"] * j["ny"]))).sum())

print("\nlabel rate:", " ".join(f"{k} {float(v[label].mean()):.4f}" for k, v in {"real": train, **tables}.items()))
print("| I(feature; label) | real | " + " | ".join(tables) + " |"); print("|---" * (len(tables) + 2) + "|")
for c in features:
    print(f"| {c} | {mi(train, c):.4f} | " + " | ".join(f"{mi(v, c):.4f}" for v in tables.values()) + " |")
