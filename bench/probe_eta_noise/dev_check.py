import sys, numpy as np, polars as pl, polars_rap
sys.path.insert(0, "/tmp/probe")
from polars_rap.io.datasets import load_task, train_test_split
if len(sys.argv) > 1 and sys.argv[1] == "ard":
    import polars_rap.decode.numeric_pairs, ard; ard.install()
task = load_task("adult", data_dir="/work/shared/data")
train, test = train_test_split(task.frame, seed=0)
res = polars_rap.synthesize(train, epsilon=1, delta=1/train.height**2, domain=task.domain, labels=task.labels, seed=0, progress=False)
lo, hi = task.domain["education-num"]
lab = task.labels[0]
f = res.model.numeric_ties.to_frame(res.model.domain if hasattr(res.model, "domain") else None) if False else None
from polars_rap.schema.domain import Domain
domain = Domain.from_mapping(train.schema, task.domain, task.labels)
ties = res.model.numeric_ties.to_frame(domain).filter((pl.col("column") == "education-num") & (pl.col("feature") == "education"))
cats = domain["education"].categories if hasattr(domain["education"], "categories") else None
def devs(frame):
    x = ((pl.col("education-num") - lo) / (hi - lo))
    g = frame.with_columns(x=x).group_by("education", lab).agg(pl.col("x").mean().alias("m"), pl.len().alias("n"))
    lm = frame.with_columns(x=x).group_by(lab).agg(pl.col("x").mean().alias("lm"))
    return g.join(lm, on=lab).with_columns(dev=pl.col("m") - pl.col("lm")).sort("education", lab)
real, syn = devs(train), devs(res.data)
cmp = real.join(syn, on=["education", lab], suffix="_syn", how="left")
print(ties.head(40))
pl.Config.set_tbl_rows(40)
print(cmp.select("education", lab, "n", "dev", "n_syn", "dev_syn"))
cats = list(task.domain["education"])
labs = list(task.domain[lab])
t = ties.with_columns(education=pl.col("code").map_elements(lambda c: cats[c] if c < len(cats) else "null", return_dtype=pl.String),
                      lab=pl.col("label_code").map_elements(lambda c: str(labs[c]), return_dtype=pl.String))
print(cmp.join(t.select("education", pl.col("lab").alias(lab), pl.col("deviation").alias("target")), on=["education", lab]).select("education", lab, "n", "dev", "target", "dev_syn"))
