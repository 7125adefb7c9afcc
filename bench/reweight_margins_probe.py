"""Which synthetic margins should ``public_use="reweight"`` rake the public rows to? (issue 19)

The release rakes the other states' rows to the relaxed rows' one-way margins. The oracle
(``public_rake_oracle.md``) says the public rows raked to CA's *true* feature x label margins
score half the CM error of its true one-way margins; the relaxed rows' two-way margins are sums
of many fitted cells, so perhaps they are good enough to carry that. This probe runs the
default fit with the matched public table and, at the release, rakes the public rows to several
sets of the relaxed rows' margins, draws each candidate as the release would (same size,
systematic resampling) and scores it on the suite's evaluation workload, beside the loop's own
relaxed rows. Diagnostic only: the evaluation reads the true rows, nothing is released.

    PYTHONPATH=src:. python -m bench.reweight_margins_probe --epsilons 0.25 1 --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def margins(relaxed, domain, public, kind: str):
    """(public cells per margin, relaxed targets per margin) for ``kind``: a margin set of
    :func:`polars_rap.public_reweight.raking_targets` (``one-way``, ``x-label``), ``both``, or
    ``top<K>`` (the ``K`` one-way margins where the relaxed rows differ most, in L1, from the
    public rows)."""
    from polars_rap.public_reweight import raking_targets

    targets = raking_targets(public, relaxed, domain)
    if kind in targets:
        return targets[kind]
    if kind == "both":
        return [c for t in targets.values() for c in t[0]], [m for t in targets.values() for m in t[1]]
    cells, one_way = targets["one-way"]
    gaps = [np.abs(np.bincount(c, minlength=len(t)) / len(c) - t).sum() for c, t in zip(cells, one_way)]
    keep = sorted(np.argsort(gaps)[::-1][:int(kind.removeprefix("top"))])
    return [cells[i] for i in keep], [one_way[i] for i in keep]


def write_table(jsonl: Path) -> str:
    """The probe's rows as a markdown table (``reweight_margins_probe.md``): errors per kind,
    and each candidate's ratio to the one-way candidate's."""
    import json as json_

    rows = [json_.loads(line) for line in jsonl.read_text().splitlines() if line.strip()]
    lines = ["| eps | seed | rows | CM | MM | LT | CM vs one-way | MM vs one-way | effective rows |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        for kind in [k for k in row if k not in ("epsilon", "seed")]:
            e = row[kind]
            ratio = (lambda c: f"{e[c] / row['one-way'][c]:.3f}") if kind != "loop" else (lambda c: "")
            lines.append(f"| {row['epsilon']:g} | {row['seed']} | {kind} | {e['CM']:.6f} | {e['MM']:.5f} | "
                         f"{e['LT']:.5f} | {ratio('CM')} | {ratio('MM')} | {e.get('effective_rows', '')} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.25, 1.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--kinds", nargs="+", default=["one-way", "x-label", "both"])
    parser.add_argument("--out", type=Path, default=RESULTS / "reweight_margins_probe.jsonl")
    parser.add_argument("--table-only", action="store_true", help="print the table of --out's rows")
    args = parser.parse_args(argv)
    if args.table_only:
        print(write_table(args.out))
        return 0

    import polars_rap
    import polars_rap.mechanism as mechanism
    from polars_rap import evaluation
    from polars_rap.public_reweight import MAX_CANDIDATE_ROWS, rake, reweighted_candidate

    from bench.public_prior import public_table
    from bench.run import SUITES, prepare_dataset

    train, _, task = prepare_dataset("acs-income-CA", None)
    public = public_table("matched", train.columns)
    eval_kwargs = dict(SUITES["headline"]["eval"])
    original = mechanism.reweighted_release
    for epsilon in args.epsilons:
        for seed in args.seeds:
            found = {}

            def probe(public_table_, relaxed, domain_, *rest, **kw):
                out_rows = rest[4]
                size = int(min(max(out_rows, relaxed.shape[0]), MAX_CANDIDATE_ROWS))
                found["loop"] = evaluation.relaxed_workload_errors(train, relaxed, domain_, seed=0, **eval_kwargs)
                for kind in args.kinds:
                    started = time.perf_counter()
                    cells, targets = margins(relaxed, domain_, public_table_, kind)
                    weights = rake(cells, targets)
                    rake_s = time.perf_counter() - started
                    candidate = reweighted_candidate(public_table_.codes, public_table_.numerics, weights, size,
                                                     domain_, np.random.default_rng(seed))
                    errors = evaluation.relaxed_workload_errors(train, candidate, domain_, seed=0, **eval_kwargs)
                    found[kind] = (errors, rake_s, float(1.0 / np.square(weights).sum()))
                return original(public_table_, relaxed, domain_, *rest, **kw)

            mechanism.reweighted_release = probe
            polars_rap.synthesize(train, epsilon=epsilon, delta=1.0 / train.height**2, domain=task.domain,
                                  labels=task.labels, seed=seed, progress=False, public=public,
                                  public_use=["reweight"])
            mechanism.reweighted_release = original

            def by_class(frame):
                return {r["query_class"]: r["mean_error"] for r in frame.iter_rows(named=True)}

            row = {"epsilon": epsilon, "seed": seed, "loop": by_class(found["loop"])}
            for kind in args.kinds:
                errors, rake_s, effective = found[kind]
                row[kind] = {**by_class(errors), "rake_s": round(rake_s, 2), "effective_rows": round(effective)}
            print(json.dumps(row), flush=True)
            with args.out.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
