"""The README's picture of the quality report: the demo's synthesis, its report, one PNG.

No browser is available to screenshot the HTML page, so this tiles the report's own figures
(the overview, the pair heatmap and the two worst columns) into ``docs/quality-report.png``
with matplotlib; the page shows the same images. Run from the repository root::

    python -m bench.quality_report_example [--html demo-report.html]

It runs ``polars-rap demo``'s synthesis (acs-income-CA, 80% of rows, epsilon 1, delta 1/n^2,
seed 0: about two minutes on two cores).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import polars_rap
from polars_rap.io import datasets
from polars_rap.quality.report import quality_report

OUTPUT = Path(__file__).resolve().parents[1] / "docs" / "quality-report.png"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", default=None, help="also write the whole report here")
    args = parser.parse_args()
    task = datasets.load_task("acs-income-CA")
    train, test = datasets.train_test_split(task.frame, test_fraction=0.2, seed=0)
    result = polars_rap.synthesize(train, epsilon=1.0, delta=1.0 / train.height**2, domain=task.domain,
                                   labels=task.labels, seed=0, progress=False)
    report = quality_report(train, result, test=test, seed=0)
    if args.html:
        report.to_html(args.html)
    figures = report.figures()
    worst = report.summary()["column"][:2].to_list()
    tiles = [figures["overview"], figures["pairs"], *(figures[f"column: {name}"] for name in worst)]
    _tile(tiles, OUTPUT)
    print(report.summary())
    print(f"wrote {OUTPUT}")


def _tile(figures, path: Path) -> None:
    """Lay the rendered figures out two by two at their own resolution (none is scaled, so
    the heatmap's labels stay readable), under a title strip."""
    import matplotlib.image
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    title = Figure(figsize=(12, 0.45), dpi=90)
    FigureCanvasAgg(title)
    title.text(0.01, 0.5, "polars-rap quality report: acs-income-CA at epsilon = 1, seed 0 "
               "(the report reads the real rows: not private)", va="center", fontsize=12)
    images = [_rgb(figure) for figure in figures]
    rows = [_side_by_side(images[:2]), _side_by_side(images[2:])]
    width = max(row.shape[1] for row in rows)
    sheet = np.vstack([_pad(_rgb(title), width=width), *(_pad(row, width=width) for row in rows)])
    path.parent.mkdir(exist_ok=True)
    matplotlib.image.imsave(path, sheet, metadata={"Software": None})


def _rgb(figure) -> np.ndarray:
    """float[height, width, 3] of a figure rendered at its own size."""
    figure.canvas.draw()
    return np.asarray(figure.canvas.buffer_rgba())[..., :3].astype(np.float32) / 255.0


def _pad(image: np.ndarray, height: int | None = None, width: int | None = None) -> np.ndarray:
    """White margin at the bottom/right up to ``height`` x ``width``."""
    extra_rows = 0 if height is None else height - image.shape[0]
    extra_columns = 0 if width is None else width - image.shape[1]
    return np.pad(image, ((0, extra_rows), (0, extra_columns), (0, 0)), constant_values=1.0)


def _side_by_side(images) -> np.ndarray:
    height = max(image.shape[0] for image in images)
    return np.hstack([_pad(image, height=height) for image in images])


if __name__ == "__main__":
    main()
