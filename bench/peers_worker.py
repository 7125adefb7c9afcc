"""Fit AIM or MST (smartnoise-synth 1.0.8, mbi 1.1) on integer codes; runs INSIDE the peers venv.

Started by ``bench/peers.py``'s ``run_peer``; not imported by the project. Reads the codes
(Parquet) and the spec (JSON, for each column's declared number of codes), and:

* builds the mbi ``Domain`` from the declared code counts, so the domain is public and never
  read off the data. smartnoise's ``fit()`` is bypassed on purpose: it would build a
  ``TableTransformer`` whose label encoders learn the category sets (and hence the domain
  sizes) from the training rows. Calling ``MSTSynthesizer.MST`` / ``AIMSynthesizer.AIM``
  directly on an mbi ``Dataset`` runs the same mechanism with our domain and spends no budget
  on preprocessing (equivalent to ``preprocessor_eps=0`` with a fully declared domain);
* seeds NumPy's global generator (smartnoise's exponential mechanism, MST's domain
  decompression and mbi's sampler use it). The Gaussian noise comes from OpenDP's
  ``make_gaussian``, whose generator is a CSPRNG that cannot be seeded, so two runs with the
  same seed differ in the noise, as with the shipped peers;
* samples ``--rows`` rows: ``aim`` / ``mst`` with mbi 1.1's ``MarkovRandomField.synthetic_data``
  (as shipped), ``*-fixed-sampler`` with :func:`sample_model` below;
* ``aim`` calibrates to add/remove neighbours, as shipped (it then spends 2.2 times the
  suite's ρ in polars-rap's replace-one terms); ``aim-replace-one`` is the same mechanism run
  at ``--rho / 2.2`` so that it is ρ-zCDP under replace-one (:func:`aim_replace_one_rho`);
* writes the synthetic codes as Parquet (same column names and order as the input), and
  prints one JSON line: fit seconds, rows, and the fitted model's cliques (column names).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import warnings

import numpy as np
import pandas as pd


def log(message: str) -> None:
    print(f"[peers_worker {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ============================================================================================
# A correct sampler for a fitted mbi MarkovRandomField
# ============================================================================================


def sample_model(model, rows: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Draw ``rows`` i.i.d. records from the distribution of ``model`` (an mbi 1.1 MRF).

    The model's cliques are triangulated along an elimination order (mbi's own junction
    tree). Going through that order backwards, each column is drawn from its exact
    conditional given its *earlier-sampled neighbours in the triangulated graph*. Those
    neighbours and the column form a clique of the chordal graph, so their joint marginal is
    contained in one junction-tree clique marginal, and, by the perfect-elimination property,
    the column is independent of every other earlier-sampled column given them. Hence the
    product of these conditionals is the model's joint distribution: no spurious correlation.

    mbi 1.1's ``synthetic_data`` differs in two ways that break this: it conditions on the
    neighbours in the *untriangulated* model graph (missing fill-in edges), and its default
    randomized rounding hands out the conditional's quantiles in row order within every
    parent group, so all columns drawn in the same group become comonotone with each other.

    Vectorised per group of equal parent values: every row's uniform draw is shifted by its
    group index and located in the concatenated per-group CDFs with one ``searchsorted``.
    """
    from mbi import junction_tree, marginal_oracles

    domain = model.domain
    cliques = [tuple(cl) for cl in model.cliques]
    jtree, order = junction_tree.make_junction_tree(domain, cliques)
    nodes = list(jtree.nodes)
    marginals = marginal_oracles.message_passing_stable(model.potentials.expand(nodes))
    neighbours: dict[str, set[str]] = {a: set() for a in domain.attrs}
    for node in nodes:  # maximal cliques of the triangulated graph
        for a in node:
            neighbours[a].update(b for b in node if b != a)
    position = {a: i for i, a in enumerate(order)}
    for a in domain.attrs:  # a column in no clique (not expected) goes last in the order
        position.setdefault(a, -1)

    data: dict[str, np.ndarray] = {}
    for col in sorted(domain.attrs, key=lambda a: -position[a]):
        parents = tuple(sorted((b for b in neighbours[col] if position[b] > position[col]),
                               key=lambda b: -position[b]))
        assert all(p in data for p in parents), (col, parents)
        size = domain[col]
        joint = np.asarray(marginals.project(parents + (col,)).datavector(flatten=False), dtype=np.float64)
        joint = np.clip(joint, 0.0, None).reshape(-1, size)  # (parent configurations, size)
        totals = joint.sum(axis=1, keepdims=True)
        cond = np.divide(joint, totals, out=np.full_like(joint, 1.0 / size), where=totals > 0)
        if parents:
            shape = tuple(domain[p] for p in parents)
            flat = np.ravel_multi_index(tuple(data[p] for p in parents), shape)
            groups, group_of_row = np.unique(flat, return_inverse=True)
            cdf = np.cumsum(cond[groups], axis=1)
        else:
            group_of_row = np.zeros(rows, dtype=np.int64)
            cdf = np.cumsum(cond, axis=1)
        cdf /= cdf[:, -1:]
        cdf[:, -1] = 1.0
        n_groups = cdf.shape[0]
        stacked = (cdf + np.arange(n_groups)[:, None]).ravel()
        u = rng.random(rows)
        hit = np.searchsorted(stacked, group_of_row + u, side="right") - group_of_row * size
        data[col] = np.clip(hit, 0, size - 1).astype(np.int64)
    return data


# ============================================================================================
# Fitting
# ============================================================================================


AIM_REPLACE_ONE_COST = 2.2
"""How many times its add/remove ρ smartnoise's AIM spends under replace-one neighbours."""


def aim_replace_one_rho(rho: float) -> float:
    """The add/remove budget at which smartnoise's AIM is ``rho``-zCDP under replace-one.

    AIM (smartnoise 1.0.8, as mbi's) spends its add/remove budget ρ' on Gaussian measurements
    of counts (L2 sensitivity 1, ρ_i = 1 / (2 σ_i²)) and on exponential-mechanism selections
    (score ``w (||x - x̂||_1 - bias)``, sensitivity ``w``, ρ_i = ε_i² / 8), in the proportion
    0.9 : 0.1 of every round (the first one-way measurements are Gaussian only). Replacing
    one row moves one count down and another up: a count vector's L2 change is √2 (ρ_i
    doubles) and a score's change is 2 w (ε_i doubles, ρ_i quadruples). So under replace-one
    the fit costs at most 2 · 0.9 ρ' + 4 · 0.1 ρ' = 2.2 ρ', and ρ' = ρ / 2.2 makes it ρ-zCDP.
    """
    return rho / AIM_REPLACE_ONE_COST


def fit(base: str, data, epsilon: float, delta: float, n_rows: int, rho: float | None = None):
    """Run smartnoise's MST / AIM on an mbi Dataset with our declared domain (fit() bypassed).

    ``rho`` (AIM only): the add/remove zCDP budget to spend instead of smartnoise's own
    ``cdp_rho(epsilon, delta)``."""
    from snsynth.utils import cdp_rho

    if base == "mst":
        from snsynth.mst.mst import MSTSynthesizer

        synth = MSTSynthesizer(epsilon=epsilon, delta=delta, verbose=True)
        synth.num_rows = n_rows
        synth.MST(data, synth.epsilon, synth.delta)
        return synth
    from snsynth.aim.aim import AIMSynthesizer

    synth = AIMSynthesizer(epsilon=epsilon, delta=delta, verbose=True)
    synth.num_rows = n_rows
    if rho is not None:
        synth.rho = rho
    else:
        synth.rho = 0.0 if synth.delta == 0.0 else cdp_rho(synth.epsilon, synth.delta)
    workload = synth.get_workload(data, degree=synth.degree, max_cells=synth.max_cells,
                                  num_marginals=synth.num_marginals)
    synth.AIM(data, workload)
    return synth


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--codes", required=True)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--mechanism", required=True,
                        choices=["aim", "mst", "aim-fixed-sampler", "mst-fixed-sampler",
                                 "aim-replace-one", "aim-replace-one-fixed-sampler"])
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--delta", type=float, required=True)
    parser.add_argument("--rho", type=float, default=None,
                        help="aim-replace-one: the suite's replace-one zCDP budget rho(epsilon, delta)")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--also-fixed-out", default=None,
                        help="also sample the SAME fitted model with the fixed sampler into this file")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=DeprecationWarning)

    from mbi import Dataset, Domain

    np.random.seed(args.seed)
    spec = json.loads(open(args.spec).read())
    names = [c["name"] for c in spec["columns"]]
    sizes = [int(c["n_codes"]) for c in spec["columns"]]
    frame = pd.read_parquet(args.codes)
    if list(frame.columns) != names:
        raise SystemExit(f"codes columns {list(frame.columns)} differ from the spec's {names}")
    # mbi names: positional, so that nothing depends on what characters the names hold
    attrs = [f"col{i}" for i in range(len(names))]
    domain = Domain(attrs, sizes)
    values = {a: frame[n].to_numpy(dtype=np.int64) for a, n in zip(attrs, names)}
    for a, n, k in zip(attrs, names, sizes):
        if values[a].size and (values[a].min() < 0 or values[a].max() >= k):
            raise SystemExit(f"column {n!r}: codes outside its declared [0, {k})")
    data = Dataset(values, domain)
    fixed = args.mechanism.endswith("-fixed-sampler")
    replace_one = args.mechanism.removesuffix("-fixed-sampler").endswith("-replace-one")
    base = args.mechanism.removesuffix("-fixed-sampler").removesuffix("-replace-one")
    if replace_one and args.rho is None:
        raise SystemExit(f"{args.mechanism} needs --rho, the replace-one budget")
    fit_rho = aim_replace_one_rho(args.rho) if replace_one else None
    log(f"{args.mechanism}: {len(frame)} rows, domain sizes {dict(zip(names, sizes))}, "
        f"epsilon={args.epsilon}, delta={args.delta:.3g}, seed={args.seed}")

    started = time.perf_counter()
    # smartnoise prints progress (AIM: every round's selection and budget used) to stdout;
    # send it to stderr, so that a timed-out run's message says how far it got
    with contextlib.redirect_stdout(sys.stderr):
        synth = fit(base, data, args.epsilon, args.delta, len(frame), rho=fit_rho)
    fit_seconds = time.perf_counter() - started
    model = synth.synthesizer
    log(f"fitted in {fit_seconds:.1f}s; cliques {[tuple(c) for c in model.cliques]}")

    jobs = [(args.out, fixed)]
    if args.also_fixed_out and not fixed:
        jobs.append((args.also_fixed_out, True))
    for path, use_fixed in jobs:
        started = time.perf_counter()
        if use_fixed:
            sampled = sample_model(model, args.rows, np.random.default_rng([args.seed, 1]))
            out = Dataset(sampled, model.domain)
        else:
            out = model.synthetic_data(rows=args.rows)
        if base == "mst":  # MST fitted on a compressed domain (rare codes merged); undo it
            out = synth.undo_compress_fn(out)
        table = out.df
        result = pd.DataFrame({n: np.asarray(table[a], dtype=np.int64) for a, n in zip(attrs, names)})
        result.to_parquet(path, index=False)
        log(f"sampled {len(result)} rows ({'fixed' if use_fixed else 'mbi'} sampler) "
            f"in {time.perf_counter() - started:.1f}s")
    name_of = dict(zip(attrs, names))
    cliques = [[name_of[a] for a in clique] for clique in model.cliques]
    privacy = ({"neighbours": "replace-one", "rho": args.rho, "add_remove_rho": fit_rho,
                "replace_one_cost": AIM_REPLACE_ONE_COST} if replace_one else
               {"neighbours": "add/remove", "add_remove_rho": float(synth.rho) if base == "aim" else None})
    print(json.dumps({"fit_seconds": fit_seconds, "rows": len(result), "cliques": cliques, "details": privacy}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
