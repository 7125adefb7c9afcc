"""ARD probe: one prior fraction per feature block (coordinate ascent on the summed evidence)."""
import numpy as np
import polars_rap.decode.tie_ridge as tr
from polars_rap.decode.numeric_ties import NumericTies
from polars_rap.schema.encoding import block_slices

SWEEPS = 2
import os
GRID = tuple(float(x) for x in os.environ.get("ARD_GRID", "0,0.01,0.03,0.1,0.3,1").split(","))

def _evidence(systems, d_by_cell, noise):
    total = 0.0
    for co, residual, variance, count, mass in systems:
        sigma = (co * (d_by_cell * variance)) @ co.T + noise * np.eye(len(residual))
        chol = np.linalg.cholesky(sigma)
        z = np.linalg.solve(chol, residual)
        total -= 0.5 * (2.0 * np.log(np.diag(chol)).sum() + z @ z)
    return total

def fit_ties(relaxed, domain, layout, noisy, std):
    slices = block_slices(domain)
    relaxed = np.asarray(relaxed, dtype=np.float64)
    deviations = np.zeros(layout.n_cells)
    noise = max(float(std), 1e-12) ** 2
    for j, l in sorted({(j, l) for j, _, l in layout.tables}):
        tables = [t for t, (jj, _, ll) in enumerate(layout.tables) if (jj, ll) == (j, l)]
        widths = [layout.width(domain, layout.tables[t][1]) for t in tables]
        starts = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
        k_l = domain.blocks[l].n_codes
        systems = {c: tr._label_system(relaxed, domain, slices, layout, j, l, c, [layout.tables[t][1] for t in tables],
                                       np.concatenate([noisy[layout.offsets[t]:layout.offsets[t + 1]][c::k_l] for t in tables]))
                   for c in range(k_l)}
        systems = {c: s for c, s in systems.items() if s is not None}
        spectra = {c: tr._spectrum(s[0]) for c, s in systems.items()}
        shared = tr._fraction([(*spectra[c], s[1], s[2]) for c, s in systems.items()], std)
        fractions = np.full(len(tables), shared)
        def cells(fr):
            return np.repeat(fr ** 2, widths)
        best = _evidence(systems.values(), cells(fractions), noise)
        for _ in range(SWEEPS):
            for i in range(len(tables)):
                for f in GRID:
                    trial = fractions.copy(); trial[i] = f
                    e = _evidence(systems.values(), cells(trial), noise)
                    if e > best + 1e-9:
                        best, fractions = e, trial
        import os
        if os.environ.get('ARD_DEBUG'): print('ARD', domain.numeric_columns[j].name, 'shared', shared, [(domain.blocks[layout.tables[t][1]].source if layout.tables[t][1] < len(domain.blocks) else 'bins', float(f)) for t, f in zip(tables, fractions)], 'std', std, flush=True)
        for c, (co, residual, variance, count, mass) in systems.items():
            d = cells(fractions) * variance
            sigma = (co * d) @ co.T + noise * np.eye(len(residual))
            gain = d * (co.T @ np.linalg.solve(sigma, residual))
            fitted = np.divide(co @ gain, count, out=np.zeros(len(count)), where=count > 1e-12)
            for i, t in enumerate(tables):
                block = slice(starts[i], starts[i + 1])
                fitted[block] -= count[block] @ fitted[block] / mass
                deviations[layout.offsets[t]:layout.offsets[t + 1]][c::k_l] = fitted[block]
    return NumericTies(layout, deviations)

def install():
    import polars_rap.decode.tie_ridge as m
    m.fit_ties = fit_ties
    import sys
    for name, mod in list(sys.modules.items()):
        if name.startswith("polars_rap") and getattr(mod, "fit_ties", None) is not None and mod is not m:
            mod.fit_ties = fit_ties
