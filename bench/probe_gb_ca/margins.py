"""#74 probe: naive-Bayes copies (each column permuted within the label) and single features."""
import sys
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
gb = lambda f, t=test: ev.ml_utility_for_domain(f, t, label, domain, model="gradient_boosting")["macro_f1"]

def nb(frame, seed, keep=()):
    rng = np.random.default_rng(seed)
    parts = []
    for _, g in frame.group_by(label, maintain_order=True):
        cols = {c: g[c] for c in frame.columns}
        order = rng.permutation(g.height)
        for c in features:
            if c not in keep:
                cols[c] = g[c].gather(rng.permutation(g.height))
        if keep:
            for c in keep:
                cols[c] = g[c].gather(order)
        parts.append(pl.DataFrame(cols))
    return pl.concat(parts)

print("| table | GB | GB NB (3 draws) | GB NB keeping AGEP×MAR×SCHL×OCCP joint |")
print("|---|---|---|---|")
for k, v in tables.items():
    a = gb(v); b = np.mean([gb(nb(v, s)) for s in range(3)]); c = np.mean([gb(nb(v, s, ("AGEP", "MAR", "SCHL", "OCCP"))) for s in range(2)])
    print(f"| {k} | {a:.4f} | {b:.4f} | {c:.4f} |", flush=True)

print("\n| feature alone | " + " | ".join(tables) + " |"); print("|---" * (len(tables) + 1) + "|")
for c in ["AGEP", "SCHL", "OCCP", "MAR", "COW", "JWMNP", "SEX", "JWTR"]:
    dom1 = Domain.from_mapping(train.select(c, label).schema, {c: task.domain[c], label: task.domain[label]}, task.labels)
    r = [ev.ml_utility_for_domain(v.select(c, label), test.select(c, label), label, dom1, model="gradient_boosting")["macro_f1"] for v in tables.values()]
    print(f"| {c} | " + " | ".join(f"{x:.4f}" for x in r) + " |", flush=True)
