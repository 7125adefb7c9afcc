"""A histogram's release fitted as it was measured: its tree's nodes, each one noisy count.

A numeric histogram (:mod:`polars_rap.fit.numeric_histograms`) is released as the nodes of a tree
over its cells, every node with the same independent noise. Its prefixes, read back by least
squares, are what the projection fitted first; but they are not independent: the ``K``
prefixes of one histogram are ``K`` weightings of the same noisy nodes, and a diagonal loss that
weighs each by its own inverse variance counts their shared noise again for every prefix that
carries it (one reason the histograms might need ``histogram_weight`` 0.1). The maximum-likelihood
fit under Gaussian noise weighs the *nodes*: each is an independent measurement of the rows
``t_(a-1) < x <= t_b`` of one label value (its cells ``a..b``), with the release's sigma.

This module builds those node queries (class ``"HN"``, one group per node and label block, all
label values of the block in one group as the prefix groups have them) for the projection to fit.
They are never measured themselves: the release is unchanged (one Gaussian mechanism on the
nodes' counts, computed from the prefix groups' exact cells), and the node groups only receive
its noisy values as their targets
(:func:`polars_rap.fit.numeric_histograms.measure_histograms`): post-processing. A node with cells
``a..b``, ``a > 0``, is the product ``x <= t_b`` times ``-x <= -t_(a-1)``; the second counts
``x = t_(a-1)`` too, a set no relaxed row holds with positive probability (and no whole value
of an integer column, whose edges are half-integers), so the fit is the release's.

Measured (``bench/results/ablation_histogram_nodes.md``): on both headline datasets the node fit
lost to the prefixes' at weights 1 and 0.3 (mixed-marginal error +3 to +64%); the prefixes stay
the default (``histogram_fit="prefixes"``).

A nullable column's histograms keep the prefix fit: the kernels relax a halfspace over a
nullable column as the expectation over its null indicator, once per halfspace, so a node's two
halfspaces over one nullable column would count the indicator as independent of itself
(:mod:`polars_rap.kernels`, which refuses such a query).
"""

from __future__ import annotations

import numpy as np

from polars_rap.schema.domain import Domain
from polars_rap.errors import ParameterError
from polars_rap.fit.numeric_histograms import DEFAULT_MAX_BINS, histogram_edges, histogram_tree
from polars_rap.workload.queries import CLASS_CODES, QueryClass, QuerySet
from polars_rap.workload.builders import _feature_and_label_blocks, _marginal_groups

__all__ = ["HISTOGRAM_FITS", "add_histogram_nodes", "check_histogram_fit", "histogram_node_groups",
           "node_groups_of"]

HISTOGRAM_FITS = ("prefixes", "nodes")
"""What the projection fits of a histogram's release: its least-squares prefixes (weighed each
by its own inverse variance) or its tree's nodes (the maximum-likelihood fit)."""


def check_histogram_fit(fit) -> str:
    """``fit`` if it is one of :data:`HISTOGRAM_FITS`, else a ParameterError that says so."""
    if fit not in HISTOGRAM_FITS:
        msg = f"histogram_fit must be one of {HISTOGRAM_FITS}. Got {fit!r}"
        raise ParameterError(msg)
    return fit


def histogram_node_groups(domain: Domain, max_bins: int = DEFAULT_MAX_BINS,
                          branching: int | str | None = None) -> QuerySet:
    """The node groups (class ``"HN"``) of every non-nullable numeric column's histogram within
    each label block, in the order of :func:`~polars_rap.fit.numeric_histograms.histogram_groups`' histograms
    (column, then label block), each histogram's nodes in the order of its
    :func:`~polars_rap.fit.numeric_histograms.histogram_tree`'s ``nodes`` (public: the domain,
    ``max_bins`` and ``branching`` only)."""
    _, labels = _feature_and_label_blocks(domain)
    block_groups, halfspaces = [], []
    for j, spec in enumerate(domain.numeric_columns):
        if spec.nullable:  # its prefixes are fitted (module docstring)
            continue
        index = np.array([j], dtype=np.int32)
        edges = histogram_edges(spec, max_bins)
        tree = histogram_tree(len(edges), branching)
        spans = [(int(np.flatnonzero(node)[0]), int(np.flatnonzero(node)[-1])) for node in tree.nodes]
        for label in labels or [None]:
            for first, last in spans:
                spaces = [(index, np.array([1.0], dtype=np.float32), float(edges[last]))]
                if first > 0:
                    spaces.append((index, np.array([-1.0], dtype=np.float32), -float(edges[first - 1])))
                block_groups.append(() if label is None else (label,))
                halfspaces.append(spaces)
    return _marginal_groups(domain, block_groups, halfspaces, QueryClass.HISTOGRAM_NODE)


def add_histogram_nodes(domain: Domain, queries: QuerySet, max_bins: int = DEFAULT_MAX_BINS,
                        branching: int | str | None = None) -> QuerySet:
    """``queries`` with :func:`histogram_node_groups` appended (earlier group ids keep their
    meaning): the workload of a plan whose histograms' nodes are fitted."""
    return QuerySet.concatenate([queries, histogram_node_groups(domain, max_bins, branching)])


def node_groups_of(queries: QuerySet) -> np.ndarray:
    """int64[N]: the workload's node groups (class ``"HN"``), ascending; empty when the
    projection fits the histograms' prefixes."""
    return np.flatnonzero(queries.group_class == CLASS_CODES["HN"])
