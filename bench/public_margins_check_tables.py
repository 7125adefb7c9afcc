"""The margins' first check scored on the tables where its two candidates differ, offline (issue 19).

The first check weighs the public rows fitted to a tenth of the margins against the same rows'
margins with every column independent, on every categorical marginal of the workload: the
exponential mechanism on their total L1 error in counts, sensitivity 2 counts a table. A table
where the public rows are about independent adds 2 counts of sensitivity and nothing to the gap,
and on a small private table the check is coarse: on Florida's commuters (14,217 rows) it passed
the other states' rows in 2-4 runs of 5 though every release of them paid
(``public_task_check.md``). The final check already scores only the half of its tables where its
candidates disagree most (:func:`~polars_rap.public.reweight.disputed_groups`, public: it reads
the candidates alone). This asks what the same choice gives the first check.

For each private table (acs-income-CA, with the public tables of ``public_margins_check_stakes``;
Florida's commuters of :mod:`bench.public_task_check`, with the other states'), ε, public table and
noise draw: the check's inputs are captured from ``synthesize`` (seed 0; the run stops there), a
first tenth of the margins is released with fresh noise, and each CM table's L1 error in counts is
computed for both candidates. The rival's scale comes from one dry run of the loop on the public
rows (draw 0), on the same tables. Reported: the pass probability with every table scored (now)
and with the most disputed half and quarter, ``1 / (1 + exp(-eps' (s E_ind - E_pub) / (2 Delta)))``.

    PYTHONPATH=src:. python -m bench.public_margins_check_tables   # -> bench/results/public_margins_check_tables.*
"""

from __future__ import annotations

import time
import numpy as np

DRAWS = 8
SHARES = (1.0, 0.5, 0.25)
FINDINGS = (
    "What it showed: scoring the most disputed tables alone sharpens the check both ways. On CA, the tables whose "
    "release pays pass more often (ε = 0.1: New Mexico 0.67 -> 0.84 with a quarter of the tables, Hawaii 0.69 -> "
    "0.85; the other states, Texas and New York 0.98 -> 0.997-0.999; ε = 0.25: 0.96-0.996 -> 0.994-0.9999), and "
    "those whose release costs pass less (ε = 0.1: West Virginia 0.045 -> 0.003, Puerto Rico 0.024 -> 0.013; "
    "ε = 0.25: New Mexico 0.73 -> 0.47, Hawaii 0.21 -> 0.06, Mississippi 0.002 -> 0). On Florida's commuters the "
    "other states' rows, whose release pays at every ε (`public_task_check.md`), pass with 0.59 -> 0.72 at "
    "ε = 0.1 and 0.81 -> 0.97 at ε = 0.25, but 0.66 -> 0.62 at ε = 1 (0.48 with half the tables), where the "
    "rival on those tables is the loop at its strongest. Mississippi's at ε = 0.1 (0.26 -> 0.56) lowers CM "
    "there but raises MM and LT (`public_margins_check_stakes.md`). A quarter does better than a half on every row "
    "but Puerto Rico's at ε = 0.1 (0.013 against 0.009). Taken into the library: the first check scores the quarter "
    "of its CM tables where its candidates differ most, and the dry run's ratio is taken on the same tables "
    "(since `352ab11` only where the margins take their largest share: `docs/public-data.md`). "
    "The ratio taken on every table instead (the last column) would make the rival weaker than the loop on the "
    "scored tables: New Mexico's rows at ε = 0.25, whose release costs, would pass with 0.99. Through the "
    "pipeline (`public_margins_check_quarter.md`, `public_task_check.md`): on CA the 24 runs decided as before, "
    "the same rows to the last digit; on Florida's commuters the other states' rows passed in 5 of 5 runs at "
    "ε = 0.25 (3 of 5 before: CM 0.67x -> 0.57x, MM 0.42x -> 0.29x, LT 0.41x -> 0.28x), as before at ε = 0.1, "
    "and in 2 of 5 at ε = 1 (4 of 5 before: CM 0.77x -> 0.91x), where the pass probability above moves from "
    "0.66 to 0.62: the five seeds drew fewer passes than either predicts. On Texas level (at ε = 1 one run of six "
    "failed either way, on another seed). Puerto Rico's rows as Florida's public table pass less often with the "
    "quarter (ε = 0.1: 0.25 -> 0.13, ε = 0.25: 0.042 -> 0.003, ε = 1: 0); the one run of five in which they "
    "passed at ε = 0.25 (`public_task_check.md`, seed 2) drew a pass of probability 0.003 (the library's own "
    "check inputs there; 0.00325 of 4,000 draws of its mechanism).")
def group_errors(backend, rows, scored, truth_counts: np.ndarray, starts: np.ndarray, n: int) -> tuple:
    """(float64 answers of relaxed ``rows`` to the ``scored`` queries, float64 L1 error in counts per group)."""
    answers = np.asarray(backend.answers_relaxed(rows, scored, np.inf), dtype=np.float64)
    return answers, np.add.reduceat(np.abs(answers * n - truth_counts), starts)


def table_rows(held: dict, table, draws: int) -> list[dict]:
    """Per draw: per CM group, the two candidates' answers and errors, and the rival's dry-run errors."""
    from polars_rap.privacy.ledger import PrivacyLedger
    from polars_rap.public.margins import FIRST_PART, candidate_weights, check_margins, independent_rows, own_margins_row, release_margins
    from polars_rap.public.reweight import reweighted_candidate
    from polars_rap.workload.queries import CLASS_CODES

    queries, domain, n, backend = held["queries"], held["domain"], held["n_rows"], held["backend"]
    groups = np.flatnonzero(queries.group_class == CLASS_CODES["CM"])
    scored = queries.take_groups(groups)
    sizes = scored.group_sizes
    starts = np.concatenate([[0], np.cumsum(sizes)])[:-1]
    truth = np.rint(held["true_answers"][queries.group_query_indices(groups)] * n)
    loop_rho = held["ledger"].rho_remaining - held["check_rho"] - FIRST_PART * held["rho"]
    out, dry = [], None
    for d in range(draws):
        first = release_margins(held["counts"], n, FIRST_PART * held["rho"], PrivacyLedger(rho_budget=1.0),
                                np.random.default_rng(200 + d))
        weights = candidate_weights(table, first, domain)
        rows = reweighted_candidate(table.codes, table.numerics, weights, held["size"], domain,
                                    np.random.default_rng(300 + d))
        pub_answers, e_pub = group_errors(backend, rows, scored, truth, starts, n)
        ind_answers, e_ind = group_errors(backend, independent_rows(check_margins(table, weights, first, domain),
                                                                    domain), scored, truth, starts, n)
        if dry is None:  # the rival's errors per table: the loop's plan on the public rows, and their independence
            own = np.rint(np.asarray(backend.answers_relaxed(rows, queries, np.inf), dtype=np.float64) * n) / n
            relaxed = held["dry_run"](own, loop_rho, np.random.default_rng(7))
            own_counts = own[queries.group_query_indices(groups)] * n
            dry = (group_errors(backend, relaxed, scored, own_counts, starts, n)[1],
                   group_errors(backend, own_margins_row(rows), scored, own_counts, starts, n)[1])
        out.append({"pub": pub_answers, "ind": ind_answers, "e_pub": e_pub, "e_ind": e_ind, "dry": dry,
                    "sizes": sizes})
    return out


def pass_probability(draw: dict, share: float, rate: float, rival_on_all: bool = False) -> tuple[float, float]:
    """(P(pass), public / independent error) scoring the ``share`` most disputed tables, the
    rival's scale from the dry run on the same tables (or on every table: ``rival_on_all``);
    ``rate``: ``eps'`` over 2 (the per-table sensitivity, 2 counts, is multiplied in here)."""
    from polars_rap.public.reweight import disputed_groups

    kept = disputed_groups([draw["pub"], draw["ind"]], draw["sizes"], share)
    loop, independent = draw["dry"]
    on = slice(None) if rival_on_all else kept
    scale = min(1.0, float(loop[on].sum() / independent[on].sum()))
    e_pub, e_ind = float(draw["e_pub"][kept].sum()), float(draw["e_ind"][kept].sum())
    x = rate * (scale * e_ind - e_pub) / (2.0 * len(kept))
    return float(1.0 / (1.0 + np.exp(-x))), e_pub / e_ind


def main() -> int:
    import polars as pl

    from polars_rap.public.prior import open_public, read_public
    from polars_rap.privacy.selection import selection_epsilon

    from bench import public_task_check as florida
    from bench.public_margins_check_rows import captured, stakes_tables
    from bench.public_margins_check_stakes import TABLES
    from bench.public_margins_probe import RESULTS, probe_setup, write_markdown

    setup = probe_setup(0.25)
    frames = stakes_tables(setup)[0]
    fl_train, fl_publics = florida.tables()
    settings = [("CA", setup.train, setup.task.domain, setup.task.labels, name, frames[name], epsilon)
                for epsilon in (0.1, 0.25) for name in TABLES]
    settings += [("FL commuters", fl_train, florida.DOMAIN, ["MIG"], name, fl_publics[variant], epsilon)
                 for name, variant in (("other states", "margins"), ("PR", "margins-PR"))
                 for epsilon in (0.1, 0.25, 1.0)]
    rows, started, cache = [], time.perf_counter(), {}
    for private, train, domain_spec, labels, name, public, epsilon in settings:
        key = (private, epsilon)  # the inputs read the private rows; the public table is passed apart
        if key not in cache:
            cache[key] = captured(train, domain_spec, labels, public, epsilon)
        held = cache[key]
        table = read_public(open_public(public, domain_spec, list(train.columns)), held["domain"])
        draws = table_rows(held, table, DRAWS)
        rate = selection_epsilon(held["check_rho"], 1) / 2.0
        row = {"private": private, "public table": name, "ε": epsilon}
        for share in SHARES:
            results = [pass_probability(d, share, rate) for d in draws]
            row[f"P(pass) {share:g}"] = round(float(np.mean([p for p, _ in results])), 4)
            row[f"pub/ind {share:g}"] = round(float(np.mean([r for _, r in results])), 3)
        row["P(pass) 0.25, rival on every table"] = round(float(np.mean(
            [pass_probability(d, 0.25, rate, rival_on_all=True)[0] for d in draws])), 4)
        rows.append(row)
        print(row, flush=True)
    frame = pl.DataFrame(rows)
    frame.write_csv(RESULTS / "public_margins_check_tables.csv")
    setting = (f"{DRAWS} noise draws of the first tenth of the margins per row (the library's check inputs at seed "
               "0, δ = 1/n²); `P(pass) s`: the first check scoring the share `s` of the CM tables where the public "
               "rows and the independent rows disagree most (1: every table, now), the rival's scale from one dry run "
               "on the same tables; `pub/ind s`: the public rows' error over the independent rows' there. "
               f"{time.perf_counter() - started:.0f} s, 2-core AMD EPYC, alone.")
    write_markdown("public_margins_check_tables", "The first check on its disputed tables", setting, frame, FINDINGS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
