"""Before/after tables of the GPU tuning rounds run by ``bench/gpu_round.sh`` (issue #18).

Each round folder under ``bench/results`` (``gpu_<device>_round<N>/``) holds the working
tree's record ``gpu_<slug>.json``, the compared commit's ``before_gpu_<slug>.json`` (both from
one call on one machine) and ``after_commit.txt``. The report tables the relaxed kernels, the
exact answers and their parts, the framework baselines and the end-to-end seconds, and writes
``bench/results/gpu_rounds.md``::

    python bench/gpu_round_report.py bench/results/gpu_h200_round{1,2,3,4a,4b,4c,4d,4e}

A folder of ``exact_<variant>.json`` records (``bench/gpu_exact.sh``) is tabled as
variants of the exact kernels on one machine, under the folder's ``about.txt`` when it has one.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _ms(entry) -> str:
    return "—" if not isinstance(entry, dict) or "median_s" not in entry else f"{entry['median_s'] * 1e3:.2f}"


def _tune_rows(after: dict, before: dict) -> list[str]:
    rows = []
    old = {(c["n_rel"], c["m"]): c for c in before.get("tune", []) if c.get("variant") == "defaults"}
    for case in after.get("tune", []):
        key = (case["n_rel"], case["m"])
        if case.get("variant") != "defaults" or key not in old or "gradient_ms" not in case:
            continue
        was = old[key]
        rows.append(f"| {key[0]:,} | {key[1]:,} | {was['relaxed_answers_ms']:.2f} | "
                    f"{case['relaxed_answers_ms']:.2f} | {was['gradient_ms']:.2f} | "
                    f"{case['gradient_ms']:.2f} | "
                    f"{(was['relaxed_answers_ms'] + was['gradient_ms']) / (case['relaxed_answers_ms'] + case['gradient_ms']):.2f} |")
    return rows


def _exact_rows(after: dict, before: dict) -> list[str]:
    rows = []
    for name, record in (("before", before), ("after", after)):
        part = record.get("exact", {}).get("cpu_workload", {})
        if "answers_exact" not in part:
            continue
        rows.append(f"| {name} | {_ms(part['answers_exact'])} | {_ms(part['host_to_device_copy'])} | "
                    f"{part['speedup_over_cpu_2core']:.1f} | "
                    f"{part.get('speedup_over_cpu_2core_kernel_only', float('nan')):.1f} |")
    return rows


def _baseline_rows(after: dict) -> list[str]:
    rows = []
    for case in after.get("baselines", []):
        ours, jax, torch = (case.get(k) for k in ("polars_rap_cuda", "jax", "torch"))
        if not all(isinstance(x, dict) and "median_s" in x for x in (ours, jax, torch)):
            continue
        rows.append(f"| {case['n_rel']:,} | {case['m']:,} | {_ms(ours)} | {_ms(jax)} | "
                    f"{jax['median_s'] / ours['median_s']:.2f} | {_ms(torch)} | "
                    f"{torch['median_s'] / ours['median_s']:.2f} |")
    return rows


def variants_section(folder: Path) -> list[str]:
    """A round of ``exact_<variant>.json`` records (``bench/gpu_exact.sh``): one row per
    variant of the exact kernels, all from one machine."""
    lines = []
    for path in sorted(folder.glob("exact_*.json")):
        record = json.loads(path.read_text())
        part = record["exact"]["cpu_workload"]
        parts = part.get("parts", {})
        config = record.get("config", {})
        warp = config.get("EXACT_WARP_PER_QUERY")
        segment = config.get("EXACT_WARP_SEGMENT_ROWS", "—") if warp else "—"
        cap = config.get("EXACT_WARP_MAX_REGISTERS", "—") if warp else "—"
        grouped = "by column " + str(part["sort_key_column"]) if part.get("sort_key_column", -1) >= 0 else "no"
        lines.append(f"| {path.stem.removeprefix('exact_')} | {segment} | {cap or 'none'} | {grouped} | "
                     f"{_ms(part['answers_exact'])} | {_ms(parts.get('count_on_device'))} | "
                     f"{_ms(parts.get('threshold_kernel', parts.get('tiled_kernel')))} | "
                     f"{_ms(parts.get('histogram_kernel'))} | "
                     f"{part['speedup_over_cpu_2core']:.1f} | "
                     f"{part['counting_only']['evaluations_per_s'] / part['cpu_2core_evaluations_per_s']:.1f} | "
                     f"{'yes' if part.get('matches_cpu_backend') else 'NO'} |")
    device = json.loads(next(folder.glob("exact_*.json")).read_text())["device"]["name"]
    about = folder / "about.txt"  # what "default" was in that call, when the folder says
    return [f"## {folder.name} ({device}: the exact kernels' variants, one machine)", "",
            *([about.read_text().strip(), ""] if about.exists() else []),
            "`kernels_cpu.py`'s exact workload (35,000 rows × 413,982 queries; 20,000 of them linear "
            "thresholds, counted by the tiled or the warp-per-query kernel):", "",
            "| variant | segment rows | register cap | rows grouped | ms (copies included) | counting (ms) | "
            "thresholds' kernel (ms) | histogram kernel (ms) | × 2-core CPU | × CPU, counting only | counts equal the CPU backend's |",
            "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|", *lines, ""]


def round_section(folder: Path) -> list[str]:
    if next(folder.glob("exact_*.json"), None) is not None:
        return variants_section(folder)
    after_path = next(p for p in sorted(folder.glob("gpu_*.json")))
    after = json.loads(after_path.read_text())
    before_path = folder / f"before_{after_path.name}"
    before = json.loads(before_path.read_text()) if before_path.exists() else {}
    device = after["device"]["name"]
    lines = [f"## {folder.name} ({device}, one call)", ""]
    log = folder / "bench.log"
    commit = next((line.split("=", 1)[1].strip() for line in log.read_text().splitlines()
                   if line.startswith("before =")), "?") if log.exists() else "?"
    after_file = folder / "after_commit.txt"
    after_commit = after_file.read_text().strip() if after_file.exists() else "the working tree"
    lines += [f"Before: commit `{commit[:7]}`; after: commit `{after_commit}`.", ""]
    tune = _tune_rows(after, before)
    if tune:
        lines += ["Relaxed answers and gradient (CUDA events, median of 10, default geometry):", "",
                  "| n_rel | m | answers before (ms) | after | gradient before (ms) | after | × (sum) |",
                  "|---:|---:|---:|---:|---:|---:|---:|", *tune, ""]
    exact = _exact_rows(after, before)
    if exact:
        lines += ["Exact answers on `kernels_cpu.py`'s workload (35,000 rows × 413,982 queries):", "",
                  "| code | ms (copies included) | rows' copy (ms) | × 2-core CPU | × CPU without the copy |",
                  "|---|---:|---:|---:|---:|", *exact, ""]
        parts = after["exact"]["cpu_workload"].get("parts")
        if parts:
            lines += ["Its parts after (CUDA events): " + ", ".join(
                f"{name.replace('_', ' ')} {_ms(value)} ms" for name, value in parts.items()
                if isinstance(value, dict)) + ".", ""]
    baselines = _baseline_rows(after)
    if baselines:
        lines += ["Fused loss + gradient against JAX and PyTorch on the same GPU (wall clock after "
                  "synchronisation):", "",
                  "| n_rel | m | polars-rap (ms) | JAX (ms) | × | PyTorch (ms) | × |",
                  "|---:|---:|---:|---:|---:|---:|---:|", *baselines, ""]
    e2e = after.get("e2e", {})
    seconds = [e2e[f"cuda_seed{s}_seconds"] for s in e2e.get("seeds", []) if f"cuda_seed{s}_seconds" in e2e]
    if seconds:
        lines += ["End to end on the 51 ACS states (cuda, seeds " + ", ".join(map(str, e2e["seeds"]))
                  + "): " + ", ".join(f"{s:.1f}" for s in seconds) + " s (the first compiles).", ""]
    return lines


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "gpu_rounds.md")
    args = parser.parse_args(argv)
    lines = ["# GPU tuning rounds (issue #18)", "",
             "Made by `bench/gpu_round_report.py` from the records of `bench/gpu_round.sh`. Each "
             "round times the commit it names (before) and the working tree (after) in one call "
             "on one machine, so each before/after pair shares a device.", ""]
    for folder in args.folders:
        lines += round_section(folder)
    args.out.write_text("\n".join(lines).rstrip() + "\n")
    print(args.out.read_text())
    return args.out


if __name__ == "__main__":
    main()
