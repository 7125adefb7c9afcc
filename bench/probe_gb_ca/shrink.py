"""#74 probe: shrink each measured feature x label margin's interaction (its departure from the
product of its own noisy margins) by the positive-part James-Stein factor
max(0, 1 - dof * std^2 / |D|^2), dof = (k_a - 1)(k_y - 1). Post-processing of the release.
Env SHRINK_CLASSES: which classes to shrink (BM; BM,CM for the tables' label interactions too)."""
import os
import numpy as np
import polars_rap.fit.rounds as rounds
from polars_rap.workload.queries import QueryClass

CLASSES = set(os.environ.get("SHRINK_CLASSES", "BM").split(","))
LOG = []


def shrunk(noisy, shape, std):
    t = noisy.reshape(shape)
    total = t.sum()
    if total <= 0:
        return noisy
    rows, cols = t.sum(axis=1, keepdims=True), t.sum(axis=0, keepdims=True)
    expected = rows * cols / total
    d = t - expected
    dof = (shape[0] - 1) * (shape[1] - 1)
    energy = float(np.sum(d * d))
    gate = float(os.environ.get("SHRINK_GATE", "0"))
    if gate > 0:  # hard gate: the interaction kept whole where it stands out of its noise, else dropped
        factor = 1.0 if energy > gate * dof * std ** 2 else 0.0
    else:
        factor = max(0.0, 1.0 - dof * std ** 2 / energy) if energy > 0 else 0.0
    LOG.append((shape, round(factor, 3)))
    return (expected + factor * d).ravel()


_original = rounds.measure_groups


def measure_groups(record, queries, selected, *args, **kwargs):
    before = len(record.groups)
    stds = _original(record, queries, selected, *args, **kwargs)
    for i in range(before, len(record.groups)):
        g = record.groups[i]
        if QueryClass.SHORT[queries.group_class[g]] not in CLASSES:
            continue
        cols = queries.columns_of(g)
        sizes = [int(queries.column_sizes[c]) for c in cols]
        if len(sizes) < 2:
            continue
        shape = (int(np.prod(sizes[:-1])), sizes[-1])  # the label block last
        record.targets[i] = shrunk(record.noisy_parts[i], shape, record.noise_stds[i])
    return stds


def install():
    import polars_rap.fit.loop as loop, polars_rap.fit.annealing as annealing
    rounds.measure_groups = loop.measure_groups = annealing.measure_groups = measure_groups
