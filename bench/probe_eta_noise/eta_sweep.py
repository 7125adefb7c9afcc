import sys, numpy as np, polars as pl, polars_rap
from polars_rap.io.datasets import load_task, train_test_split
from polars_rap.quality.relations import category_relations
from polars_rap.schema.domain import Domain
import polars_rap.decode.numeric_ties as nt
import polars_rap.pipeline.fitting as fitting
name = sys.argv[1]; oracle = len(sys.argv) > 3 and sys.argv[3] == "oracle"
if oracle:
    orig = nt.release_ties
    def exact(sums, n_rows, layout, rho, ledger, rng):
        noisy, std = orig(sums, n_rows, layout, rho, ledger, rng)
        return np.asarray(sums, dtype=np.float64) / (int(n_rows) * nt.TIE_QUANTUM), 1e-7
    fitting.release_ties = exact
    fitting.TIE_NOISE_CAP = 1e9
task = load_task(name, data_dir="/work/shared/data")
train, test = train_test_split(task.frame, seed=0)
domain = Domain.from_mapping(train.schema, task.domain, task.labels)
for eps, seed in [(float(e), s) for e in sys.argv[2].split(",") for s in (0, 1, 2)]:
    res = polars_rap.synthesize(train, epsilon=eps, delta=1/train.height**2, domain=task.domain, labels=task.labels, seed=seed, progress=False)
    rel = category_relations(train, res.data, domain).filter(pl.col("ratio_real") >= 0.05)
    kept = (rel["ratio_synthetic"] / rel["ratio_real"])
    ties = res.model.numeric_ties is not None
    print(f"{name} eps={eps} seed={seed} oracle={oracle} ties={ties} eta_kept mean={kept.mean():.3f} min={kept.min():.3f}  pairs:",
          " ".join(f"{a}x{b}:{r:.2f}->{s:.2f}" for a, b, r, s in rel.select("numeric","categorical","ratio_real","ratio_synthetic").iter_rows()), flush=True)
