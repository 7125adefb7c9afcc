"""Probe (issue #78): numeric pairs kept by a released rank statistic, offline on a default fit.

Usage: python bench/probe_rank_pairs.py DATASET EPSILON SEED SHARE (appends /tmp/probe/copula2.jsonl).
The feasible design: Pair statistic on a fixed public grid of cells of each numeric's
mapped coordinate (linear + geometric edges at both ends), cells' u from the relaxed rows' per-label
CDF (post-processing), S_jk = (1/n) sum (u_j - 1/2)(u_k - 1/2) (null: 1/2), Gaussian noise at a
share of rho (sensitivity sqrt(P)/2 / n), positive-part shrinkage; decoding reorders each label's
numerics by a sequential Gaussian model whose latent R is calibrated until the decoded rows' own
statistic meets the target. Variant "oracle": u from the real rows' exact mid-ranks, no grid."""
import sys, json, itertools, math, numpy as np, polars as pl
sys.path.insert(0, "/work/main")
import polars_rap
from scipy.stats import rankdata, norm
from bench.run import prepare_dataset, TREE_MODELS
from bench.harness import workload_scores
from polars_rap.quality import evaluation
from polars_rap.quality.relations import relation_summary, numeric_pairs
from polars_rap.schema.domain import Domain
from polars_rap.schema.transforms import to_unit
from polars_rap.schema.encoding import numeric_values, block_slices
from polars_rap.privacy.accounting import rho_from_epsilon_delta

ds, eps, seed, share = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
train, test, task = prepare_dataset(ds, None)
delta = 1.0 / train.height**2
label = task.labels[0]
domain = Domain.from_mapping(train.schema, task.domain, task.labels)
specs = domain.numeric_columns
nums = [s.name for s in specs]
p = len(nums); P = p * (p - 1) // 2
rho = rho_from_epsilon_delta(eps, delta)
n = train.height
noise_rng = np.random.default_rng(seed + 1000)
k = np.arange(1, 25)
EDGES = np.unique(np.concatenate([np.linspace(0, 1, 17), 2.0 ** (-k / 2), 1 - 2.0 ** (-k / 2)]))
K = len(EDGES) - 1
labels_of = domain.columns[domain.block_index(label)].categories if False else None
lab_train = train[label].to_numpy()
label_values = np.unique(lab_train)

def tcoord(frame):
    """float[n, p] mapped coordinates, NaN null."""
    return np.column_stack([to_unit(np.clip(numeric_values(frame[s.name], s), s.lower, s.upper), s) for s in specs])

def cells(T):
    c = np.clip(np.searchsorted(EDGES, T, side="right") - 1, 0, K - 1)
    return np.where(np.isnan(T), -1, c)

def relaxed_u(relaxed):
    """u[label_index, j, cell]: the relaxed rows' mid-CDF of each cell within label."""
    lab_block = block_slices(domain)[domain.block_index(label)]
    pl_ = np.asarray(relaxed[:, lab_block], float); pl_ = np.clip(pl_, 0, None); pl_ /= pl_.sum(1, keepdims=True)
    U = np.zeros((len(label_values), p, K))
    for j, s in enumerate(specs):
        t = np.clip(relaxed[:, domain.n_categorical_coords + j].astype(float), 0, 1)
        w_nn = np.ones(len(t))
        if s.nullable:
            ib = block_slices(domain)[domain.block_index(s.name, indicator=True)]
            q = np.clip(np.asarray(relaxed[:, ib], float), 0, None); w_nn = q[:, 0] / q.sum(1)
        c = cells(t)
        for li in range(len(label_values)):
            h = np.bincount(c, weights=pl_[:, li] * w_nn, minlength=K)
            cdf = np.cumsum(h) / max(h.sum(), 1e-12)
            U[li, j] = cdf - h / max(h.sum(), 1e-12) / 2
    return U

def stat_grid(frame, U):
    lab = frame[label].to_numpy(); T = cells(tcoord(frame))
    li = np.searchsorted(label_values, lab)
    V = np.full(T.shape, 0.5)
    for j in range(p):
        ok = T[:, j] >= 0
        V[ok, j] = U[li[ok], j, T[ok, j]]
    V -= 0.5
    return {(a, b): float((V[:, a] * V[:, b]).mean()) for a, b in itertools.combinations(range(p), 2)}

def stat_oracle(frame):
    lab = frame[label].to_numpy(); X = tcoord(frame)
    V = np.zeros(X.shape)
    for c in label_values:
        idx = np.flatnonzero(lab == c)
        for j in range(p):
            ok = ~np.isnan(X[idx, j])
            if ok.sum() > 1:
                V[idx[ok], j] = (rankdata(X[idx[ok], j]) - 0.5) / ok.sum() - 0.5
    return {(a, b): float((V[:, a] * V[:, b]).mean()) for a, b in itertools.combinations(range(p), 2)}

def nscore(x, rng):
    r = np.argsort(np.argsort(x + 1e-12 * rng.random(len(x)), kind="stable"), kind="stable") + 1
    return norm.ppf((r - 0.5) / len(x))

def reorder(frame, R, rng):
    lab = frame[label].to_numpy()
    cols = {name: frame[name].to_numpy().astype(float).copy() for name in nums}
    for c in np.unique(lab):
        idx = np.flatnonzero(lab == c)
        Z = np.zeros((len(idx), p))
        for j, name in enumerate(nums):
            x = cols[name][idx]; ok = ~np.isnan(x)
            if ok.sum() < 3:
                continue
            zc = nscore(x[ok], rng)
            E = list(range(j))
            if E:
                ZE = Z[ok][:, E]
                coef, *_ = np.linalg.lstsq(ZE, zc, rcond=None)
                e = zc - ZE @ coef; e = (e - e.mean()) / (e.std() + 1e-12)
                b = np.linalg.solve(R[np.ix_(E, E)], R[E, j]); s2 = max(1e-6, 1 - R[j, E] @ b)
                s = ZE @ b + math.sqrt(s2) * e
            else:
                s = zc
            vals = np.sort(x[ok]); out = np.empty_like(vals); out[np.argsort(s, kind="stable")] = vals
            xx = x.copy(); xx[ok] = out; cols[name][idx] = xx
            Z[np.flatnonzero(ok), j] = nscore(out, rng)
    return frame.with_columns([pl.Series(name, cols[name], nan_to_null=True).cast(frame.schema[name]) for name in nums])

def psd(R):
    w, V = np.linalg.eigh(R); w = np.clip(w, 1e-3, None); R = V @ np.diag(w) @ V.T
    d = np.sqrt(np.diag(R)); return R / np.outer(d, d)

def calibrated(frame, target, stat, seed_):
    both = {}
    Xn = ~np.isnan(tcoord(frame))
    for a, b in target: both[(a, b)] = max((Xn[:, a] & Xn[:, b]).mean(), 1e-3)
    R = np.eye(p)
    for (a, b), t in target.items():
        R[a, b] = R[b, a] = 2 * math.sin(math.pi * max(-.99, min(.99, 12 * t / both[(a, b)])) / 6)
    R = psd(R)
    for it in range(5):
        out = reorder(frame, R, np.random.default_rng(seed_))
        got = stat(out)
        gap = max(abs(12 * (target[q] - got[q]) / both[q]) for q in target)
        for (a, b), t in target.items():
            R[a, b] = R[b, a] = max(-.99, min(.99, R[a, b] + 1.1 * 12 * (t - got[(a, b)]) / both[(a, b)]))
        R = psd(R)
    return reorder(frame, R, np.random.default_rng(seed_)), gap

def score(data):
    item = dict(workload_scores(train, data, domain, n_mixed_marginals=20000, n_linear_thresholds=200000))
    item.update(relation_summary(train, data, domain))
    item["lr"] = evaluation.ml_utility_for_domain(data, test, label, domain)["macro_f1"]
    for prefix, model in TREE_MODELS.items():
        item[prefix] = evaluation.ml_utility_for_domain(data, test, label, domain, model=model)["macro_f1"]
    return item

sigma = 0.5 * math.sqrt(P) / (n * math.sqrt(2 * share * rho))
def noisy(stat):
    out = {}
    for q, s in stat.items():
        s = s + noise_rng.normal(0, sigma)
        out[q] = s * max(0.0, 1 - sigma**2 / s**2) if s != 0 else 0.0
    return out

res = polars_rap.synthesize(train, epsilon=eps, delta=delta, domain=task.domain, labels=task.labels, seed=seed, progress=False)
D = res.data
U = relaxed_u(res.relaxed)
variants = {"base": D}
tg = noisy(stat_grid(train, U)); variants["grid"], gap_g = calibrated(D, tg, lambda f: stat_grid(f, U), seed)
to = noisy(stat_oracle(train)); variants["oracle"], gap_o = calibrated(D, to, stat_oracle, seed)
print(f"P={P} K={K} sigma_spearman~{12*sigma:.3f} residual gaps {gap_g:.3f} {gap_o:.3f}")
scores = {k: score(v) for k, v in variants.items()}
keys = [k for k in scores["base"] if isinstance(scores["base"][k], (int, float))]
with open("/tmp/probe/copula2.jsonl", "a") as f:
    f.write(json.dumps({"dataset": ds, "eps": eps, "seed": seed, "share": share, **{v: {k: scores[v][k] for k in keys} for v in scores}}) + "\n")
for k in keys:
    if any(t in k for t in ("pearson", "spearman", "eta", "error", "lr", "gb", "rf")):
        print(f"{k:24s} " + " ".join(f"{scores[v][k]:>10.5f}" for v in scores))
t1 = numeric_pairs(train, D, domain)
for v in ("grid", "oracle"):
    t1 = t1.with_columns(pl.Series(f"sp_{v}", numeric_pairs(train, variants[v], domain)["spearman_synthetic"]),
                         pl.Series(f"pe_{v}", numeric_pairs(train, variants[v], domain)["pearson_synthetic"]))
with pl.Config(tbl_rows=40, tbl_cols=20, tbl_width_chars=250, float_precision=3):
    print(t1)
