"""Constrained-Bayes probe: posterior mean shrink s_i vs sqrt(s_i) (ensemble spread kept)."""
import os, sys, json, numpy as np, polars as pl, polars_rap
from polars_rap.io.datasets import load_task, train_test_split
from polars_rap.quality.relations import relation_summary
from polars_rap.schema.domain import Domain
import polars_rap.quality.evaluation as ev
import polars_rap.decode.tie_ridge as tr
mode = sys.argv[1]
if mode == "cb":
    def _posterior(co, eigenvalues, vectors, residual, std, tau2):
        if tau2 <= 0.0:
            return np.zeros(co.shape[1])
        noise = max(float(std), 1e-12) ** 2
        spread = tau2 * eigenvalues + noise
        s = np.divide(tau2 * eigenvalues, spread)
        # projected residual scaled by sqrt(s)/eig instead of s/eig: g = C^T V diag(w) V^T r
        w = np.divide(np.sqrt(s), eigenvalues, out=np.zeros_like(s), where=eigenvalues > 1e-12 * eigenvalues.max())
        return co.T @ (vectors @ ((vectors.T @ residual) * w))
    tr._posterior = _posterior
if mode == "ard":
    sys.path.insert(0, "/tmp/probe")
    import polars_rap.decode.numeric_pairs, ard
    ard.install()
out = []
for name in sys.argv[2].split(","):
    task = load_task(name, data_dir="/work/shared/data")
    train, test = train_test_split(task.frame, seed=0)
    domain = Domain.from_mapping(train.schema, task.domain, task.labels)
    if mode == 'topk':
        sys.path.insert(0, '/tmp/probe'); import topk; topk.install(train, domain)
    label = task.labels[0]
    for eps in [float(e) for e in sys.argv[3].split(",")]:
        for seed in [int(s) for s in sys.argv[4].split(",")]:
            res = polars_rap.synthesize(train, epsilon=eps, delta=1/train.height**2, domain=task.domain, labels=task.labels, seed=seed, progress=False)
            r = relation_summary(train, res.data, domain)
            w = {} if os.environ.get("NO_WORKLOAD") else {row["query_class"]: row["mean_error"] for row in ev.workload_errors(train, res.data, domain, seed=0).iter_rows(named=True)}
            gb = ev.ml_utility_for_domain(res.data, test, label, domain, model="gradient_boosting")["macro_f1"]
            lr = ev.ml_utility_for_domain(res.data, test, label, domain)["macro_f1"]
            row = dict(mode=mode, dataset=name, eps=eps, seed=seed, eta_mean=r["eta_kept_mean"], eta_min=r["eta_kept_min"],
                       med=r["median_error_max"], pear=r["pearson_mean_delta"], gb=gb, lr=lr, **w)
            print(json.dumps(row), flush=True)
