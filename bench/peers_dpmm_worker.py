"""Fit dpmm 0.1.9's AIM, MST or PrivBayes pipeline on raw columns; runs INSIDE
``bench/.venv-peers-dpmm``.

Started by ``bench/peers.py``'s ``run_peer``; not imported by the project (its helpers above
``main`` need only the standard library, so the tests import them). Reads the data (Parquet:
``bench/peers_dpmm.py``'s ``to_dpmm`` columns), dpmm's public domain and the budget plan
(``plan_budget``; JSON), and:

* refuses (exit 1) a table with a column holding a single value: dpmm's ``TableBinner`` drops
  such a column and writes its value into every synthetic row, a branch outside any privacy
  accounting; and checks that dpmm binned exactly the planned numeric columns with PrivTree,
  spending at most the planned ``proc_epsilon`` (``binning_epsilon``);
* builds dpmm's pipeline (``AIMPipeline`` / ``MSTPipeline`` / ``PrivBayesPipeline``) with
  ``binner_type="priv-tree"``, ``proc_epsilon`` = the plan's binning ε, ``n_bins`` = the
  harness's bins value (PrivTree's most leaves), ``n_jobs=1`` (no worker processes: the peak
  RSS is this process's, and the machine's cores are not all ours), and then sets the plan's
  add/remove budget on dpmm's mechanism (``rho``, and ``sigma`` / ``epsilon`` where dpmm derives
  them at construction), so that the whole fit is ρ-zCDP under replace-one (see
  ``bench/peers_dpmm.py``). For PrivBayes it sets the selection score's sensitivity to 1
  (:func:`privbayes_score_scale`: the score, a normalised mutual information, lies in [0, 1]);
* seeds dpmm's ``RandomState`` (binning's and sampling's choices). The Laplace and Gaussian
  noise comes from OpenDP's samplers, which cannot be seeded;
* samples ``--rows`` rows with dpmm's ``generate`` (its bundled private-pgm sampler, as
  shipped), writes them as Parquet (dpmm's columns) and prints one JSON line: fit seconds,
  rows, cliques (dpmm's column names), the budget figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time

PIPELINES = {"dpmm-aim": "AIMPipeline", "dpmm-mst": "MSTPipeline", "dpmm-privbayes": "PrivBayesPipeline"}


def log(message: str) -> None:
    print(f"[peers_dpmm_worker {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def privbayes_score_scale(epsilon: float, n_nodes: int, sensitivity: float = 1.0) -> float:
    """What dpmm's PrivBayes ``ExponentialMechanism`` divides its scores by (twice this is the
    softmax temperature): ``sensitivity / (epsilon / n_nodes)``, where dpmm passes ``epsilon``
    = the mechanism's ε / 2 and ``n_nodes`` = the column count; with ``sensitivity`` 1 each
    selection is ε_i = epsilon / n_nodes DP (and ε_i-bounded range) under any neighbours."""
    return sensitivity / (epsilon / n_nodes)


def constant_columns(n_unique: dict[str, int]) -> list[str]:
    """Columns (name -> number of distinct values, nulls counted) dpmm would treat as static."""
    return [name for name, count in n_unique.items() if count <= 1]


def apply_budget(pipeline, plan: dict) -> dict:
    """Set the plan's add/remove budget on the dpmm mechanism inside ``pipeline``."""
    mechanism = pipeline.gen.generator
    settings = plan["model"]
    mechanism.rho = settings["rho"]
    if "sigma" in settings:
        mechanism.sigma = settings["sigma"]
    if "epsilon" in settings:  # PrivBayes: its selection uses epsilon / 2
        mechanism.epsilon = settings["epsilon"]
    return {"rho_set": mechanism.rho, "sigma_set": getattr(mechanism, "sigma", None)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True)
    parser.add_argument("--domain", required=True, help="dpmm's domain (JSON)")
    parser.add_argument("--plan", required=True, help="the budget plan (JSON, bench/peers_dpmm.py)")
    parser.add_argument("--mechanism", required=True, choices=sorted(PIPELINES))
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--delta", type=float, required=True)
    parser.add_argument("--rho", type=float, required=True)
    parser.add_argument("--bins", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    import numpy as np
    import pandas as pd
    from dpmm import pipelines
    from dpmm.models import priv_bayes

    np.random.seed(args.seed)
    frame = pd.read_parquet(args.data)
    domain = json.loads(open(args.domain).read())
    plan = json.loads(open(args.plan).read())
    if list(frame.columns) != list(domain):
        raise SystemExit(f"data columns {list(frame.columns)} differ from the domain's {list(domain)}")
    if abs(plan["rho"] - args.rho) > 1e-12 * args.rho or plan["n_columns"] != frame.shape[1]:
        raise SystemExit(f"plan {plan} does not match rho {args.rho} and {frame.shape[1]} columns")
    static = constant_columns({c: int(frame[c].nunique(dropna=False)) for c in frame.columns})
    if static:
        raise SystemExit(f"columns {static} hold one value: dpmm would copy it out unprotected; not run")
    numeric = [c for c, d in domain.items() if "lower" in d]
    if len(numeric) != plan["n_numeric"]:
        raise SystemExit(f"{len(numeric)} numeric columns, the plan has {plan['n_numeric']}")

    if args.mechanism == "dpmm-privbayes":
        def compute_delta(self, data):  # the score's range is [0, 1]: sensitivity 1
            return privbayes_score_scale(self.epsilon, len(data.domain.attrs), 1.0)
        priv_bayes.ExponentialMechanism.compute_delta = compute_delta
    gen_kwargs = {}
    if "max_model_size" in plan["model"]:
        gen_kwargs["max_model_size"] = plan["model"]["max_model_size"]
    pipeline = getattr(pipelines, PIPELINES[args.mechanism])(
        epsilon=args.epsilon, delta=args.delta, n_jobs=1, binner_type="priv-tree",
        proc_epsilon=plan["binning_epsilon"], n_bins=args.bins, **gen_kwargs)
    budget = apply_budget(pipeline, plan)
    log(f"{args.mechanism}: {frame.shape[0]} rows, {frame.shape[1]} columns ({len(numeric)} numeric), "
        f"epsilon={args.epsilon}, delta={args.delta:.3g}, rho={args.rho:.6g}, bins={args.bins}, "
        f"seed={args.seed}; plan {plan}")

    started = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):  # keep stdout for the one JSON line
        pipeline.fit(frame, domain=domain, random_state=args.seed)
    fit_seconds = time.perf_counter() - started
    binner = pipeline.proc
    spent = {c: e for c, e in binner.spent_epsilon.items() if e is not None}
    if sorted(binner.num_cols) != sorted(numeric) or binner.static_columns or binner.nan_columns:
        raise SystemExit(f"dpmm binned {binner.num_cols} (planned {numeric}); static "
                         f"{list(binner.static_columns)}, null columns {list(binner.nan_columns)}")
    if numeric and sum(spent.values()) > plan["binning_epsilon"] * (1 + 1e-9):
        raise SystemExit(f"PrivTree spent {spent}, more than {plan['binning_epsilon']}")
    mechanism = pipeline.gen.generator
    if mechanism.rho != plan["model"]["rho"]:
        raise SystemExit(f"dpmm's mechanism rho {mechanism.rho} is not the plan's {plan['model']['rho']}")
    log(f"fitted in {fit_seconds:.1f}s; PrivTree bins {binner.n_bins}, spent {spent}; "
        f"cliques {mechanism.cliques}")

    started = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):
        synthetic = pipeline.generate(n_records=args.rows, random_state=args.seed + 1)
    synthetic = synthetic[list(frame.columns)]
    for column in frame.columns:  # categorical codes as strings, numerics as floats
        synthetic[column] = synthetic[column].astype(str if "categories" in domain[column] else float)
    synthetic.to_parquet(args.out, index=False)
    log(f"sampled {len(synthetic)} rows in {time.perf_counter() - started:.1f}s")
    details = {"neighbours": "replace-one", "rho": args.rho, "rho_binning": plan["rho_binning"],
               "rho_model": plan["rho_model"], "binning_epsilon": plan["binning_epsilon"],
               "binning_epsilon_spent": sum(spent.values()) if spent else 0.0,
               "privtree_bins": {c: int(b) for c, b in binner.n_bins.items()},
               "add_remove": plan["model"], **budget}
    cliques = [list(c) for c in (mechanism.cliques or [])]
    print(json.dumps({"fit_seconds": fit_seconds, "rows": len(synthetic), "cliques": cliques,
                      "details": details}, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
