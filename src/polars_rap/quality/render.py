"""Figures and HTML of a :class:`~polars_rap.quality.report.QualityReport`.

The figures are plain ``matplotlib.figure.Figure`` objects drawn on the Agg canvas, never
through ``pyplot``, so making them touches no global state and needs no display. The HTML page
is static and self-contained: the figures are PNG files embedded as base64 ``data:`` images,
the style sheet is inline, there is no script and no reference to anything outside the file
(no link, font or path). matplotlib is an optional dependency: ``pip install 'polars-rap[report]'``.
"""

from __future__ import annotations

import base64
import html
import io
from typing import Any

import numpy as np
import polars as pl

from polars_rap.schema.transforms import scale_fractions, scale_points

__all__ = ["report_figures", "report_html"]

_MAX_BARS = 25
"""Most categories a column's bar chart shows (the ones with the largest fractions)."""
_DPI = 90
_REAL, _SYNTHETIC = "#4c72b0", "#dd8452"


def _matplotlib():
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        msg = ("the quality report's figures and HTML need matplotlib, which polars-rap does not "
               "install by default: pip install 'polars-rap[report]'")
        raise ImportError(msg) from error
    del matplotlib
    return Figure, FigureCanvasAgg


def _new_figure(width: float, height: float):
    figure_class, canvas_class = _matplotlib()
    figure = figure_class(figsize=(width, height), dpi=_DPI, layout="constrained")
    canvas_class(figure)  # the Agg canvas: no display, no pyplot
    return figure


# ---------------------------------------------------------------- figures
def report_figures(report) -> dict[str, Any]:
    """``{"overview": Figure, "column: NAME": Figure, ..., "pairs": Figure[, "workload": Figure]}``."""
    figures = {"overview": overview_figure(report)}
    figures |= {f"column: {d.name}": column_figure(d) for d in report.distributions}
    figures["pairs"] = pair_figure(report)
    if report.workload_errors is not None:
        figures["workload"] = workload_figure(report.workload_errors)
    return figures


def overview_figure(report):
    """Each column's distance as a bar, worst at the top: where the table is good at a glance."""
    summary = report.summary()
    figure = _new_figure(5.2, min(9.0, 1.2 + 0.22 * summary.height))
    axes = figure.subplots()
    positions = np.arange(summary.height)[::-1]
    colours = [_REAL if kind == "categorical" else _SYNTHETIC for kind in summary["kind"]]
    axes.barh(positions, summary["distance"].to_numpy(), color=colours)
    axes.set_yticks(positions, [_shorten(name) for name in summary["column"]], fontsize=7)
    axes.set_xlim(0, max(0.05, float(summary["distance"].max()) * 1.1))
    axes.set_xlabel("distance, real vs synthetic (0: identical, 1: disjoint)", fontsize=8)
    axes.tick_params(axis="x", labelsize=7)
    handles = [axes.bar(0, 0, color=c)[0] for c in (_REAL, _SYNTHETIC)]
    axes.legend(handles, ["categorical: total variation", "numeric: Kolmogorov-Smirnov"], fontsize=7,
                frameon=False, loc="lower right")
    axes.set_title("per-column distance, worst first", fontsize=9)
    return figure


def column_figure(distribution):
    """Bars of category fractions, or a histogram and the CDFs of a numeric column."""
    d = distribution
    if d.kind == "categorical":
        figure = _new_figure(5.2, 3.2)
        axes = figure.subplots()
        shown = np.arange(len(d.labels))
        if shown.size > _MAX_BARS:
            shown = np.sort(np.argsort(-np.maximum(d.real, d.synthetic), kind="stable")[:_MAX_BARS])
        positions = np.arange(shown.size)
        axes.bar(positions - 0.2, d.real[shown], width=0.4, color=_REAL, label="real")
        axes.bar(positions + 0.2, d.synthetic[shown], width=0.4, color=_SYNTHETIC, label="synthetic")
        axes.set_xticks(positions, [_shorten(d.labels[i]) for i in shown], rotation=45 if shown.size > 6 else 0,
                        ha="right" if shown.size > 6 else "center", fontsize=7)
        axes.set_ylabel("fraction of rows", fontsize=8)
        more = f", {shown.size} of {len(d.labels)} shown" if shown.size < len(d.labels) else ""
        axes.set_title(f"{d.name}: total variation {d.distance:.3f}{more}", fontsize=9)
        axes.legend(fontsize=7, frameon=False)
        return figure
    figure = _new_figure(5.2, 3.2)
    histogram, cdf = figure.subplots(1, 2)
    edges = d.labels
    histogram.stairs(d.real, edges, color=_REAL, label="real")
    histogram.stairs(d.synthetic, edges, color=_SYNTHETIC, label="synthetic")
    histogram.set_ylabel("fraction of non-null rows", fontsize=8)
    histogram.legend(fontsize=7, frameon=False)
    cdf.stairs(np.cumsum(d.real), edges, color=_REAL, baseline=None)
    cdf.stairs(np.cumsum(d.synthetic), edges, color=_SYNTHETIC, baseline=None)
    cdf.set_ylim(0, 1.02)
    cdf.set_ylabel("cumulative fraction", fontsize=8)
    for axes in (histogram, cdf):
        _value_axis(axes, d)
        axes.tick_params(labelsize=7)
    nulls = ""
    if d.real_null_rate or d.synthetic_null_rate:
        nulls = f"; null rate {d.real_null_rate:.3f} real, {d.synthetic_null_rate:.3f} synthetic"
    figure.suptitle(f"{d.name}: Kolmogorov-Smirnov {d.distance:.3f}{nulls}", fontsize=9)
    return figure


def pair_figure(report):
    """Heatmap of the change in association of every pair of columns."""
    names = [d.name for d in report.distributions]
    index = {name: i for i, name in enumerate(names)}
    change = np.zeros((len(names), len(names)))
    for row in report.pairs.iter_rows(named=True):
        i, j = index[row["column_a"]], index[row["column_b"]]
        change[i, j] = change[j, i] = row["change"]
    size = min(11.0, 2.5 + 0.45 * len(names))
    figure = _new_figure(size + 1.2, size)
    axes = figure.subplots()
    image = axes.imshow(change, cmap="Reds", vmin=0.0, vmax=max(0.05, float(change.max())))
    axes.set_xticks(range(len(names)), [_shorten(n) for n in names], rotation=60, ha="right", fontsize=7)
    axes.set_yticks(range(len(names)), [_shorten(n) for n in names], fontsize=7)
    if len(names) <= 16:
        for i in range(len(names)):
            for j in range(len(names)):
                if i != j:
                    axes.text(j, i, f"{change[i, j]:.2f}", ha="center", va="center", fontsize=6,
                              color="white" if change[i, j] > 0.6 * image.get_clim()[1] else "black")
    figure.colorbar(image, ax=axes, shrink=0.8, label="|association synthetic - real|")
    axes.set_title("change in association (Cramer's V / correlation ratio / Pearson)", fontsize=9)
    return figure


def workload_figure(errors: pl.DataFrame):
    """Box plots of the absolute query errors per class."""
    classes = errors.get_column("query_class").unique(maintain_order=True).to_list()
    figure = _new_figure(5.2, 3.0)
    axes = figure.subplots()
    data = [errors.filter(pl.col("query_class") == c).get_column("error").to_numpy() for c in classes]
    axes.boxplot(data, tick_labels=classes, whis=(5, 95), showfliers=False)
    axes.set_ylabel("absolute error (fraction of rows)")
    axes.set_title("workload errors per query class (whiskers: 5th-95th percentile)", fontsize=9)
    return figure


def _value_axis(axes, d) -> None:
    """A numeric column's x axis: on its declared scale (a log column's on a log-like axis, so
    its bins look even), at most five ticks, labelled compactly (``100k``, ``1.5M``) so that a
    wide range's labels do not run together; a temporal column keeps its internal units."""
    from matplotlib import ticker  # present: the figure was made by _new_figure

    lower, upper = float(d.labels[0]), float(d.labels[-1])
    if d.scale != "linear" and upper > lower:
        axes.set_xscale("function", functions=(
            lambda x: scale_fractions(x, lower, upper, d.scale), lambda t: scale_points(t, lower, upper, d.scale)))
        axes.set_xticks(np.unique(_round_significant(scale_points(np.linspace(0, 1, 5), lower, upper, d.scale))))
    else:
        axes.xaxis.set_major_locator(ticker.MaxNLocator(nbins=4))
    if not d.temporal:
        axes.xaxis.set_major_formatter(ticker.EngFormatter(sep=""))
    axes.set_xlim(lower, upper)


def _round_significant(values: np.ndarray, digits: int = 2) -> np.ndarray:
    """``values`` rounded to ``digits`` significant digits (tick positions a reader can read)."""
    magnitude = np.where(values == 0, 1.0, 10.0 ** (np.floor(np.log10(np.abs(np.where(values == 0, 1.0, values))))
                                                     - digits + 1))
    return np.round(values / magnitude) * magnitude


def _shorten(text: str, length: int = 18) -> str:
    return text if len(text) <= length else text[: length - 1] + "…"


def _png(figure) -> str:
    buffer = io.BytesIO()
    # No "Software" text chunk: it would put matplotlib's web address into the file.
    figure.savefig(buffer, format="png", dpi=_DPI, metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


# ---------------------------------------------------------------- HTML
_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1180px; margin: 1.5em auto; padding: 0 1em;
       color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
.warning { background: #fff3cd; border: 1px solid #e0c36c; padding: 0.6em 0.9em; }
.private { background: #eef5ee; border: 1px solid #9cc29c; padding: 0.2em 0.9em 0.8em; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(440px, 1fr)); gap: 0.8em; }
img { max-width: 100%; height: auto; }
table { border-collapse: collapse; font-size: 0.88em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }
th { background: #f2f2f2; } td.text { text-align: left; }
pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
"""


def report_html(report, fragment: bool = False) -> str:
    """The report as a static HTML page (``fragment=True``: a ``<div>`` for a notebook)."""
    figures = report_figures(report)  # fails first, naming the extra, when matplotlib is missing
    images = {name: _png(figure) for name, figure in figures.items()}
    names = report.names
    parts = [
        "<h1>Synthetic data quality report</h1>",
        f'<p class="warning"><strong>Not private.</strong> {_text(report.note)}</p>',
        f"<p>Real table: {_text(names['real'])} ({report.n_real:,} rows). "
        f"Synthetic table: {_text(names['synthetic'])} ({report.n_synthetic:,} rows).</p>",
        _privacy_section(report.privacy),
        "<h2>Columns</h2>",
        "<p>Distance per column: total variation between the category fractions (null "
        "included) of a categorical column; Kolmogorov-Smirnov between the distributions of "
        "a numeric column's non-null values (clipped to its bounds). 0 is identical, 1 "
        "disjoint. Worst first.</p>",
        *_hints_section(report.hints),
        *_constraints_section(report.constraints),
        '<div class="grid">',
        _image(images["overview"], "per-column distance, worst first"),
        f"<div>{_table(report.summary())}</div>",
        "</div>",
        '<div class="grid">',
        *(_image(images[f"column: {d.name}"], f"{d.name}: real and synthetic distribution")
          for d in report.distributions),
        "</div>",
        "<h2>Pairs of columns</h2>",
        "<p>Association of each pair in each table: Cramér's V for two categorical columns, "
        "the correlation ratio for a categorical and a numeric one, Pearson's r for two "
        "numeric ones (pairwise non-null rows). The heatmap shows the absolute change; the "
        "table lists the worst pairs.</p>",
        _image(images["pairs"], "heatmap of the change in association between pairs of columns"),
        _table(report.worst_pairs(10)),
        *_relations_section(report),
    ]
    if report.workload is not None:
        parts += [
            "<h2>Workload errors</h2>",
            "<p>Absolute error of the synthetic table's answer to each query of the benchmark "
            "workload (CM: class-conditional categorical marginals, MM: mixed marginals, LT: "
            "linear thresholds), as a fraction of rows.</p>",
            _table(report.workload), _image(images["workload"], "workload errors per query class"),
        ]
    if report.ml_utility is not None:
        parts += [
            "<h2>Machine-learning utility</h2>",
            f"<p>{_ml_models_text(report.ml_utility)} (scikit-learn), each trained on the "
            "synthetic rows and, for reference, on the real rows, and scored on the held-out "
            "test rows: macro F1 and accuracy.</p>",
            _table(report.ml_utility),
        ]
    parts.append("<p><small>Made by polars-rap. A static page: it runs no code and loads nothing.</small></p>")
    body = "\n".join(parts)
    if fragment:
        return f"<div>\n<style>{_STYLE}</style>\n{body}\n</div>"
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>polars-rap quality report</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f"{body}\n</body>\n</html>\n"
    )


_ML_MODEL_NAMES = {"logistic": "logistic regression", "gradient_boosting": "gradient boosting "
                   "(histogram-based)", "random_forest": "random forest (100 trees)"}


def _ml_models_text(ml_utility) -> str:
    """'Logistic regression, gradient boosting ... and random forest ...': the models in the table."""
    names = [_ML_MODEL_NAMES.get(m, m) for m in ml_utility.get_column("model").unique(maintain_order=True)]
    text = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return text[:1].upper() + text[1:]


def _relations_section(report) -> list[str]:
    """Numeric pairs (Pearson and Spearman) and numeric × categorical pairs (correlation ratio,
    per-category medians), when the domain has them."""
    parts = []
    if report.numeric_pairs.height:
        pairs = report.numeric_pairs
        deltas = {m: (pairs[f"{m}_synthetic"] - pairs[f"{m}_real"]).abs() for m in ("pearson", "spearman")}
        parts += [
            "<h2>Numeric pairs</h2>",
            f"<p>Pearson's r and Spearman's rank correlation of each pair of numeric columns "
            f"(pairwise non-null rows), worst Spearman change first. |Δr| mean "
            f"{deltas['pearson'].mean():.3f}, worst {deltas['pearson'].max():.3f}; |Δρ| mean "
            f"{deltas['spearman'].mean():.3f}, worst {deltas['spearman'].max():.3f}.</p>",
            _table(pairs.head(15)),
        ]
    if report.category_relations.height:
        parts += [
            "<h2>Numeric columns within categories</h2>",
            "<p>Correlation ratio of each numeric column with each categorical one (how much of "
            "its variance the categories explain), and the worst relative error of a "
            "category's median over the categories holding at least 5% of the real rows; the "
            "pairs least kept first.</p>",
            _table(report.category_relations.head(15)),
        ]
    return parts


def _hints_section(hints) -> list[str]:
    """The declaration hints (:mod:`polars_rap.quality.shape`) as a list, in both spellings."""
    if not hints:
        return []
    items = "".join(f"<li>{_text(hint.text(f'{hint.config_fix} in a config file; {hint.python_fix} in Python'))}</li>"
                    for hint in hints)
    return ["<p>What the real values suggest declaring (then synthesize again):</p>", f"<ul>{items}</ul>"]


def _constraints_section(constraints) -> list[str]:
    """The declared rules with the rows breaking each, real and synthetic."""
    if constraints is None:
        return []
    return ["<p>Declared constraints, and the rows that break each (a rule false, or a computed column off "
            "its value): the synthetic rows keep them by construction; real rows that break one mean the rule "
            "is not what the data holds.</p>", _table(constraints)]


def _privacy_section(privacy) -> str:
    if privacy is None:
        return ('<div class="private"><h2>What was released (private)</h2><p>No privacy report '
                "was given: pass the synthesis result or its saved model to show the guarantee.</p></div>")
    facts = pl.DataFrame({
        "epsilon": [privacy.epsilon], "delta": [privacy.delta], "rho budget": [privacy.rho_budget],
        "rho spent": [privacy.rho_spent], "rows (public)": [privacy.n_rows],
        "measured answers": [privacy.measurements.height],
    })
    return (
        '<div class="private"><h2>What was released (private)</h2>'
        "<p>The synthetic table's privacy guarantee, from its privacy report: this part alone "
        "is what the synthesis released. Everything outside this box reads the real rows.</p>"
        f"{_table(facts)}<pre>{_text(privacy.summary())}</pre></div>"
    )


def _image(data: str, alt: str) -> str:
    return f'<img src="data:image/png;base64,{data}" alt="{_text(alt)}">'


def _text(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _table(frame: pl.DataFrame) -> str:
    header = "".join(f"<th>{_text(name)}</th>" for name in frame.columns)
    rows = []
    for row in frame.iter_rows():
        cells = []
        for value in row:
            if isinstance(value, float):
                cells.append(f"<td>{value:.4g}</td>")
            elif isinstance(value, int):
                cells.append(f"<td>{value:,}</td>")
            else:
                cells.append(f'<td class="text">{_text("" if value is None else value)}</td>')
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
