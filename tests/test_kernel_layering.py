"""The kernels depend on the query contract only (issue #18, part 4): no module under
``polars_rap/kernels`` imports the projection, the strategy or anything above them, so that a
backend can be written, tested and tuned without knowing the algorithm that calls it."""

from __future__ import annotations

import ast
from pathlib import Path

import polars_rap

KERNELS = Path(polars_rap.__file__).resolve().parent / "kernels"
ALLOWED = ("polars_rap.kernels", "polars_rap.queries", "polars_rap.errors")
"""What a kernel module may import from the package: its siblings, the query contract
(``QuerySet``) and the error types."""


def _package_imports(path: Path) -> set[str]:
    """Every ``polars_rap...`` module ``path`` imports, at any depth (function bodies and
    ``TYPE_CHECKING`` blocks included)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("polars_rap"):
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names if alias.name.startswith("polars_rap"))
    return names


def test_kernel_modules_import_only_the_query_contract():
    modules = sorted(KERNELS.glob("*.py"))
    assert len(modules) >= 8  # the package's layout is what this test reads
    outside = {path.name: sorted(name for name in _package_imports(path)
                                 if not any(name == a or name.startswith(a + ".") for a in ALLOWED))
               for path in modules}
    assert {name: found for name, found in outside.items() if found} == {}


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    """The walk reaches nested imports, as ``cuda.project`` had one before the split."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from polars_rap.projection import RelaxedParams\n")
    assert _package_imports(module) == {"polars_rap.projection"}
