"""Past the one-way margins on CA, offline (issue 19): the loop's budget on three-way tables, a
closer prior for the margins.

``public_use="margins"`` leaves CA's CM at ε = 0.25 above half the run without a public table,
and ``public_margins_alternatives.md`` found no split of the margins' budget that gets there.
This asks two other questions, in the same simulation (CA's true margins get the Gaussian noise
of a release at their share of the ε = 0.25 budget, δ = 1/n², L2 sensitivity sqrt(2)/n a
table; each is pulled toward its prior by :func:`~polars_rap.public.shrinkage.shrunk_margin`; the
other states' rows are raked to them, n drawn along
:func:`~polars_rap.public.reweight.sampling_order` and scored by the suite, 3 noise draws):

- **The loop's budget on the raked rows' worst tables** (PMW-pub, Liu et al. 2021): the margins
  take 80% as the library's do, then the 18% the loop would have spends itself on feature pair x
  label tables (the CM workload's): ``K`` of them chosen by the exponential mechanism on their L1
  error against the raked rows (half of the 18%, L1 sensitivity 2/n) or by an oracle (the
  largest true error beyond the measurement's expected noise), each measured with the rest,
  pulled toward the raked rows' own table, and raked to with the margins. Without margins, the
  whole budget in ``rounds`` such rounds, each raking to everything measured so far.
- **A closer prior for the margins:** the other states' margins mixed (non-negative weights
  summing to 1, least squares weighted by each margin's noise) to fit the *measured* margins,
  or, as an oracle, the true ones; each margin is then shrunk toward the mixture's instead of
  the pooled table's. A mixture is post-processing of the released margins and the public rows.

No release: the noise is simulated on CA's true margins.

    PYTHONPATH=src:. python -m bench.public_margins_beyond    # -> bench/results/public_margins_beyond.md
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
DRAWS = 3
EPSILON = 0.25
MARGINS_SHARE = 0.8
"""Of the ε budget, as :data:`~polars_rap.public.margins.MAX_SHARE` gives on CA at ε = 0.25."""
LOOP_SHARE = 0.18
"""What the loop would have had: the rest less the final check's 2%."""
FINDINGS = (
    "What it showed (2-core AMD EPYC; errors only, no timings): neither reaches CM 0.5x. The loop's 18% on "
    "three-way tables leaves CM at 0.58x chosen privately (0.62x with 3 tables) and 0.56x chosen by an oracle, "
    "and raises MM and LT: raking to the tables' estimates pulls the rows off their numeric margins. Five tables "
    "chosen privately are each measured with 1.8% of rho, noise std 0.0083 a cell: on OCCP x SCHL x label's 1,200 "
    "cells that is an L1 noise near 8 against the raked rows' error there of 0.20, so the estimate stays the "
    "raked rows' table. The whole budget in ten such rounds, without margins, scores 0.63x. A mixture of the "
    "states brings the margins' prior closer to CA (their L1 distance summed over columns 2.62 -> 1.42, fitted to "
    "the true margins) but not where CM's error is: OCCP's, COW's and JWTR's mixture is no closer than the pooled "
    "table's, and CM stays 0.58x; MM and LT fall a little (0.43x -> 0.42x / 0.41x, 0.53x -> 0.50x / 0.49x), "
    "within the draws' spread.")


def public_states(height: int) -> np.ndarray:
    """int64[height]: the state table (an index into the sorted files, CA left out) each of the
    matched public table's rows comes from, in :func:`~bench.public_prior.public_table`'s order."""
    import polars as pl

    from polars_rap.io.datasets import preprocess_acs_income

    from bench.public_prior import PRIVATE_STATE, data_dir

    files = [f for f in sorted(data_dir().glob("acs2018_1yr_person_*.parquet"))
             if not f.stem.endswith(f"_{PRIVATE_STATE}")]
    state = np.repeat(np.arange(len(files)), [preprocess_acs_income(pl.read_parquet(f)).height for f in files])
    if len(state) != height:
        msg = "the state tables' rows do not add up to the public table's"
        raise RuntimeError(msg)
    return state


def one_way_weights(domain) -> dict:
    """{column: budget weight} of every one-way margin, the library's split before a binary
    feature's margin was split by the label (2026-11-29, ``public_margins_split.md``), which these
    probes simulate: a categorical feature's in proportion to the square root of its codes,
    averaging 1 over the features; :data:`~polars_rap.public.margins.LABEL_WEIGHT` for the
    label's, :data:`~polars_rap.public.margins.NUMERIC_WEIGHT` for a numeric column's."""
    from polars_rap.public.margins import LABEL_WEIGHT, NUMERIC_WEIGHT

    blocks = [block for block in domain.blocks if not block.indicator]
    scale = float(np.mean([np.sqrt(block.n_codes) for block in blocks if not block.is_label]))
    weights = {block.source: LABEL_WEIGHT if block.is_label else float(np.sqrt(block.n_codes)) / scale
               for block in blocks}
    return {**weights, **{spec.name: NUMERIC_WEIGHT for spec in domain.numeric_columns}}


def scored(mean, none: dict) -> dict:
    """The report's columns of one simulated release: its mean CM, MM and LT (and their ratios to
    ``none``), macro F1 (``mean``: [CM, MM, LT, macro F1])."""
    return {**{f"{c} (x none)": f"{m:.6f} ({m / none[c]:.2f}x)" for c, m in zip(("CM", "MM", "LT"), mean)},
            "macro F1": round(float(mean[3]), 4)}


def write_report(name: str, title: str, setting: str, rows: list[dict], none: dict, findings: str,
                 draws: int = DRAWS, state: str = "CA", probe: str | None = None) -> None:
    """``bench/results/<name>.md`` (``<name>_<state>.md`` for a private ``state`` other than CA,
    :func:`~bench.public_margins_probe.probe_setup`; and printed): ``title``, the simulation's
    setting (``setting`` ends it: what the margins and tables were), the table of ``rows`` (means of
    ``draws`` noise draws) and ``findings``; ``probe``: the module's name when it is not ``name``."""
    import polars as pl

    from bench.run import table_markdown

    where = ("acs-income-CA", "headline.csv, 3 seeds") if state == "CA" else (
        f"{state}'s rows as in other_state_check.py", "other_state_check.csv, the latest run per seed")
    lines = [f"# {title} (bench/{probe or name}.py)", "",
             f"{where[0]}, ε = {EPSILON} (δ = 1/n²), {draws} noise draws a row; ratios to polars-rap's default "
             f"without a public table ({where[1]}: CM {none['CM']:.6f}, MM {none['MM']:.5f}, "
             f"LT {none['LT']:.5f}). Margins at {MARGINS_SHARE:.0%} of the budget with the library's one-way weights"
             f"{setting}. Run {time.strftime('%Y-%m-%d')}.", "",
             table_markdown(pl.DataFrame(rows)), "", findings]
    (RESULTS / f"{name}{'' if state == 'CA' else f'_{state}'}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def mixture(margins: list[np.ndarray], noisy: list[np.ndarray], stds: list[float]) -> np.ndarray:
    """float64[groups] >= 0 summing to 1: the mixture of the groups' margins (``margins[i]``:
    float64[groups, cells of margin i]) closest to ``noisy`` in least squares, margin ``i``
    weighted by ``1 / stds[i]``. Non-negative least squares with the sum held by a heavy row."""
    from scipy.optimize import nnls

    groups = margins[0].shape[0]
    design = np.vstack([m.T / s for m, s in zip(margins, stds, strict=True)] + [np.full((1, groups), 1e3)])
    target = np.concatenate([y / s for y, s in zip(noisy, stds, strict=True)] + [[1e3]])
    weights, _ = nnls(design, target)
    return weights / weights.sum()


def main() -> int:
    from polars_rap.privacy.accounting import rho_from_epsilon_delta
    from polars_rap.public.margins import NUMERIC_CELLS
    from polars_rap.public.reweight import rake
    from polars_rap.public.shrinkage import shrunk_margin

    from bench.public_margins_probe import drawn_scores, probe_setup, shares
    from bench.public_rake_oracle import _codes

    setup = probe_setup(EPSILON)
    train, test, task, label, domain, public = \
        setup.train, setup.test, setup.task, setup.label, setup.domain, setup.public
    categorical, numeric, columns, n, none, order = \
        setup.categorical, setup.numeric, setup.columns, setup.n, setup.none, setup.order
    rho = rho_from_epsilon_delta(EPSILON, 1.0 / n**2)
    truth_codes = _codes(train, task.domain, categorical, numeric, NUMERIC_CELLS)
    public_codes = _codes(public, task.domain, categorical, numeric, NUMERIC_CELLS)
    weight = one_way_weights(domain)
    weights = np.array([weight[c] for c in columns])
    state = public_states(public.height)
    by_state = {c: np.stack([shares(public_codes[c][0][state == s], public_codes[c][1])
                             for s in range(state.max() + 1)]) for c in columns}
    true_margins = [shares(*truth_codes[c]) for c in columns]

    pairs = list(itertools.combinations([c for c in categorical if c != label], 2))

    def table_cells(codes: dict, a: str, b: str) -> tuple[np.ndarray, int]:
        (xa, ka), (xb, kb), (y, ky) = codes[a], codes[b], codes[label]
        return (xa * kb + xb) * ky + y, ka * kb * ky

    public_tables = {p: table_cells(public_codes, *p) for p in pairs}
    true_tables = {p: shares(*table_cells(truth_codes, *p)) for p in pairs}

    def table_errors(w: np.ndarray) -> dict:
        return {p: float(np.abs(shares(*public_tables[p], w) - true_tables[p]).sum()) for p in pairs}

    def measured_margins(share: float, prior: str, rng) -> list[np.ndarray]:
        """The margins at ``share`` of rho, each shrunk toward ``prior``'s margin."""
        stds = [float(1.0 / (n * np.sqrt(share * rho * w / weights.sum()))) for w in weights]
        noisy = [t + rng.normal(0.0, s, len(t)) for t, s in zip(true_margins, stds, strict=True)]
        if prior == "pooled":
            priors = [shares(*public_codes[c]) for c in columns]
        else:
            fitted_to = true_margins if prior == "mixture fitted to the true margins" else noisy
            mix = mixture([by_state[c] for c in columns], fitted_to, stds)
            priors = [mix @ by_state[c] for c in columns]
        return [shrunk_margin(y, s, p) for y, s, p in zip(noisy, stds, priors, strict=True)]

    def tables_measured(w: np.ndarray, cells: list, targets: list, chosen: list, rho_tables: float, rng) -> np.ndarray:
        """``w`` raked again with ``chosen`` tables measured at ``rho_tables`` each."""
        std = float(1.0 / (n * np.sqrt(rho_tables)))
        for p in chosen:
            noisy = true_tables[p] + rng.normal(0.0, std, true_tables[p].size)
            cells.append(public_tables[p][0])
            targets.append(shrunk_margin(noisy, std, shares(*public_tables[p], w)))
        return rake(cells, targets)

    def exponential(errors: dict, candidates: list, rho_select: float, rng):
        """One table by the exponential mechanism (ε = sqrt(8 rho), L1 sensitivity 2/n), Gumbel-max."""
        epsilon = np.sqrt(8.0 * rho_select)
        scores = epsilon * n * np.array([errors[p] for p in candidates]) / 4.0 + rng.gumbel(size=len(candidates))
        return candidates.pop(int(np.argmax(scores)))

    def released(method: str, k: int, rng) -> np.ndarray:
        margin_cells = [public_codes[c][0] for c in columns]
        if method.startswith("rounds"):  # PMW-pub alone
            w, cells, targets = np.full(public.height, 1.0 / public.height), [], []
            left, per_round = list(pairs), 0.98 * rho / k
            for _ in range(k):
                chosen = [exponential(table_errors(w), left, per_round / 2, rng)]
                w = tables_measured(w, cells, targets, chosen, per_round / 2, rng)
            return w
        prior = method if method.startswith("mixture") else "pooled"
        targets = measured_margins(MARGINS_SHARE, prior, rng)
        w = rake(margin_cells, targets)
        if k == 0:
            return w
        errors, loop = table_errors(w), LOOP_SHARE * rho
        if method == "oracle":
            noise = {p: true_tables[p].size * 0.8 / (n * np.sqrt(loop / k)) for p in pairs}
            chosen = sorted(pairs, key=lambda p: noise[p] - errors[p])[:k]
            return tables_measured(w, list(margin_cells), list(targets), chosen, loop / k, rng)
        left = list(pairs)
        chosen = [exponential(errors, left, loop / 2 / k, rng) for _ in range(k)]
        return tables_measured(w, list(margin_cells), list(targets), chosen, loop / 2 / k, rng)

    variants = (("the library's margins", "pooled", 0),
                ("+ the loop's 18% on tables chosen privately", "private", 3),
                ("+ the loop's 18% on tables chosen privately", "private", 5),
                ("+ the loop's 18% on tables chosen by an oracle", "oracle", 5),
                ("no margins: the whole budget in rounds", "rounds", 10),
                ("margins shrunk toward a state mixture fitted to them", "mixture fitted to the releases", 0),
                ("margins shrunk toward a state mixture fitted to the true margins",
                 "mixture fitted to the true margins", 0))
    rows = []
    for name, method, k in variants:
        rng, started = np.random.default_rng(100), time.time()
        scores = np.mean([drawn_scores(public, released(method, k, rng), order, train, test, domain, label, rng)
                          for _ in range(DRAWS)], axis=0)
        rows.append({"released rows": name, "tables": k, **scored(scores, none)})
        print(rows[-1], f"{time.time() - started:.0f}s", flush=True)

    write_report("public_margins_beyond", "Past the one-way margins", "; tables: feature pair x label", rows, none,
                 FINDINGS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
