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
    :func:`polars_rap.public.reweight.raking_targets` (``one-way``, ``x-label``), ``both``, or
    ``top<K>`` (the ``K`` one-way margins where the relaxed rows differ most, in L1, from the
    public rows)."""
    from polars_rap.public.reweight import raking_targets

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


def check_power(folder: Path, shares=(1.0, 0.5, 0.25, 0.1)) -> str:
    """How often the check would release each candidate, per fit saved in ``folder``
    (``--per-group``) and per share of its tables scored (those where the candidates disagree
    most, :func:`polars_rap.public.reweight.disputed_groups`): the exponential mechanism's
    exact probabilities at the check's eps' (2% of rho(eps, 1/n**2), n the fit's rows), from each
    candidate's L1 error per table (saved with ``--kinds one-way x-label``: the columns are the
    loop's rows and those two). Reads saved scores; runs nothing."""
    from polars_rap.privacy.accounting import rho_from_epsilon_delta
    from polars_rap.public.reweight import CHECK_SHARE, disputed_groups

    lines = ["| eps | seed | tables scored | P(loop) | P(one-way) | P(x-label) | best on all tables |",
             "|---|---|---|---|---|---|---|"]
    for path in sorted(folder.glob("eps*_seed*.npz")):
        saved = np.load(path)
        epsilon = float(path.stem.split("_")[0].removeprefix("eps"))
        seed = int(path.stem.split("seed")[1])
        n_rows = int(saved["n_rows"])
        eps_check = np.sqrt(8 * CHECK_SHARE * rho_from_epsilon_delta(epsilon, 1.0 / n_rows**2))
        per_group, answers, sizes = saved["per_group"], list(saved["answers"]), saved["sizes"]
        best = str(saved["kinds"][int(np.argmin(per_group.sum(axis=1)))])
        for share in shares:
            kept = disputed_groups(answers, sizes, share)
            totals = per_group[:, kept].sum(axis=1)
            weights = np.exp(-(totals - totals.min()) * eps_check / (2 * 2 * len(kept)))
            p = weights / weights.sum()
            lines.append(f"| {epsilon:g} | {seed} | {len(kept)} of {len(sizes)} | {p[0]:.3f} | {p[1]:.3f} | "
                         f"{p[2]:.3f} | {best} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.25, 1.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--kinds", nargs="+", default=["one-way", "x-label", "both"])
    parser.add_argument("--out", type=Path, default=RESULTS / "reweight_margins_probe.jsonl")
    parser.add_argument("--per-group", type=Path, help="folder for each fit's per-table errors (npz)")
    parser.add_argument("--table-only", action="store_true", help="print the table of --out's rows")
    parser.add_argument("--power", type=Path, help="print the check's probabilities from a --per-group folder")
    args = parser.parse_args(argv)
    if args.table_only:
        print(write_table(args.out))
        return 0
    if args.power:
        print(check_power(args.power))
        return 0

    import polars_rap
    import polars_rap.public.release as public_release  # where synthesize draws the candidates, checks them
    from polars_rap.quality import evaluation
    from polars_rap.kernels import cpu
    from polars_rap.public.reweight import check_groups, rake, reweighted_candidate
    from polars_rap.privacy.selection_scores import selection_scores

    from bench.public_prior import public_table
    from bench.run import SUITES, prepare_dataset

    train, _, task = prepare_dataset("acs-income-CA", None)
    public = public_table("matched", train.columns)
    eval_kwargs = dict(SUITES["headline"]["eval"])
    original_raked, original_checked = public_release.raked_candidates, public_release.checked_release
    for epsilon in args.epsilons:
        for seed in args.seeds:
            found = {}

            def capture(public_table_, relaxed, domain_, size, rng):  # the public table, domain and size
                found.update(public=public_table_, domain=domain_, size=size)
                return original_raked(public_table_, relaxed, domain_, size, rng)

            def probe(relaxed, candidates, effective, queries, true_answers, l1_sensitivity, n_rows, *rest):
                public_table_, domain_, size = found["public"], found["domain"], found["size"]
                groups = check_groups(queries)
                indices = queries.group_query_indices(groups)
                true_counts = np.rint(true_answers[indices] * n_rows)
                scored = queries.take_groups(groups)

                sizes = queries.group_sizes[groups]
                found.update(sizes=sizes, n_rows=n_rows)

                def check_l1(x):  # the check's score: total L1 error in counts over its tables
                    answers = cpu.answers_relaxed(x, scored, np.inf)
                    per_group = selection_scores(true_counts, answers, sizes, n_rows)
                    found.setdefault("per_group", []).append(per_group)
                    found.setdefault("answers", []).append(answers)
                    return float(selection_scores(true_counts, answers, np.array([len(indices)]), n_rows)[0])

                found["loop"] = (evaluation.relaxed_workload_errors(train, relaxed, domain_, seed=0, **eval_kwargs),
                                 check_l1(relaxed))
                for kind in args.kinds:
                    started = time.perf_counter()
                    cells, targets = margins(relaxed, domain_, public_table_, kind)
                    weights = rake(cells, targets)
                    rake_s = time.perf_counter() - started
                    candidate = reweighted_candidate(public_table_.codes, public_table_.numerics, weights, size,
                                                     domain_, np.random.default_rng(seed))
                    errors = evaluation.relaxed_workload_errors(train, candidate, domain_, seed=0, **eval_kwargs)
                    found[kind] = (errors, rake_s, float(1.0 / np.square(weights).sum()), check_l1(candidate))
                return original_checked(relaxed, candidates, effective, queries, true_answers, l1_sensitivity,
                                        n_rows, *rest)

            public_release.raked_candidates, public_release.checked_release = capture, probe
            polars_rap.synthesize(train, epsilon=epsilon, delta=1.0 / train.height**2, domain=task.domain,
                                  labels=task.labels, seed=seed, progress=False, public=public,
                                  public_use=["reweight"])
            public_release.raked_candidates, public_release.checked_release = original_raked, original_checked

            def by_class(frame):
                return {r["query_class"]: r["mean_error"] for r in frame.iter_rows(named=True)}

            loop_errors, loop_l1 = found["loop"]
            row = {"epsilon": epsilon, "seed": seed, "loop": {**by_class(loop_errors), "check_l1": loop_l1}}
            for kind in args.kinds:
                errors, rake_s, effective, l1 = found[kind]
                row[kind] = {**by_class(errors), "rake_s": round(rake_s, 2), "effective_rows": round(effective),
                             "check_l1": l1}
            if args.per_group:  # each candidate's error per check table, and its answers, for offline analysis
                np.savez(args.per_group / f"eps{epsilon:g}_seed{seed}.npz", kinds=np.array(["loop", *args.kinds]),
                         per_group=np.array(found["per_group"]), answers=np.array(found["answers"]),
                         sizes=found["sizes"], n_rows=found["n_rows"])
            print(json.dumps(row), flush=True)
            with args.out.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
