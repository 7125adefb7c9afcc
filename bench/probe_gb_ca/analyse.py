"""#74 probe: what gradient boosting finds in AIM's acs-income-CA rows that rap++'s lack."""
import sys, itertools, json
import numpy as np, polars as pl
from polars_rap.io.datasets import load_task, train_test_split
from polars_rap.schema.domain import Domain
import polars_rap.quality.evaluation as ev

task = load_task("acs-income-CA")
train, test = train_test_split(task.frame, seed=0)
domain = Domain.from_mapping(train.schema, task.domain, task.labels)
label = task.labels[0]
tables = {"real": train, **{p.split("/")[-1].removesuffix(".parquet"): pl.read_parquet(p) for p in sys.argv[1:]}}
features = [c for c in train.columns if c != label]

def gb(frame, test_frame=test):
    return ev.ml_utility_for_domain(frame, test_frame, label, domain, model="gradient_boosting")["macro_f1"]

print("## GB macro F1, all features, and with one feature made constant (in train and test)")
const = lambda f, c: f.with_columns(pl.lit(f[c][0]).cast(f.schema[c]).alias(c))
base = {k: gb(v) for k, v in tables.items()}
print("| feature | " + " | ".join(tables) + " |"); print("|---" * (len(tables) + 1) + "|")
print("| (all) | " + " | ".join(f"{base[k]:.4f}" for k in tables) + " |")
for c in features:
    t2 = const(test, c)
    row = [gb(const(v, c).with_columns(pl.lit(test[c][0]).cast(v.schema[c]).alias(c)), t2) - base[k] for k, v in tables.items()]
    print(f"| {c} | " + " | ".join(f"{x:+.4f}" for x in row) + " |", flush=True)

def codes(frame, c):
    s = frame[c]
    if s.dtype.is_numeric() and s.n_unique() > 30:
        edges = np.quantile(train[c].drop_nulls().to_numpy(), np.linspace(0, 1, 11)[1:-1])
        return np.searchsorted(edges, s.fill_null(-1).to_numpy(), side="right")
    return s.cast(pl.String).fill_null("∅").to_numpy()

def cmi(frame, a, b):
    df = pl.DataFrame({"a": codes(frame, a), "b": codes(frame, b), "y": frame[label].cast(pl.String).to_numpy()})
    n = df.height
    j = df.group_by("a", "b", "y").len("nab")
    ay = df.group_by("a", "y").len("na"); by = df.group_by("b", "y").len("nb"); yy = df.group_by("y").len("ny")
    j = j.join(ay, on=["a", "y"]).join(by, on=["b", "y"]).join(yy, on="y")
    return float((j["nab"] / n * np.log(j["nab"] * j["ny"] / (j["na"] * j["nb"]))).sum())

print("\n## I(a; b | label), nats: pairs where rap++ misses by more than 0.02")
rows = []
for a, b in itertools.combinations(features, 2):
    r = {k: cmi(v, a, b) for k, v in tables.items()}
    rows.append((a, b, r))
rows.sort(key=lambda t: -t[2]["real"])
print("| pair | " + " | ".join(tables) + " |"); print("|---" * (len(tables) + 1) + "|")
for a, b, r in rows:
    if max(abs(r[k] - r["real"]) for k in tables) > 0.02:
        print(f"| {a} × {b} | " + " | ".join(f"{r[k]:.3f}" for k in tables) + " |")
