"""The package's layers (issue #72): imports point one way, no two modules import each other
through any chain, and the kernels depend on the query contract only (issue #18, part 4).

The layers are stated once, as the import-linter contracts in ``pyproject.toml``; CI runs
``lint-imports`` and this module runs the same contracts, then looks for cycles the contracts
do not see (between two modules of one layer). Every import counts: module level, inside
functions and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import grimp

import polars_rap

KERNELS = Path(polars_rap.__file__).resolve().parent / "kernels"
ALLOWED = ("polars_rap.kernels", "polars_rap.workload.queries", "polars_rap.errors")
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
    module.write_text("def f():\n    from polars_rap.fit.projection import RelaxedParams\n")
    assert _package_imports(module) == {"polars_rap.fit.projection"}


def _cycles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in imports.get(module, ()):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for module in sorted(imports):
            if module not in index:
                visit(module)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_the_cycle_search_finds_a_cycle_through_three_modules():
    imports = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(imports) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_two_modules_of_the_package_import_each_other_through_any_chain():
    graph = grimp.build_graph("polars_rap")
    imports = {module: graph.find_modules_directly_imported_by(module) for module in graph.modules}
    assert len(imports) >= 90  # every module of the package, packages' __init__ included
    assert _cycles(imports) == []


def test_the_import_linter_contracts_are_kept():
    """The layers and the kernels' contract of ``pyproject.toml``, as ``lint-imports`` runs them
    (0: every contract kept; 1: one broken, with the offending import chains printed).

    In a subprocess: import-linter configures logging with ``dictConfig``, which disables
    every logger already made, the package's included, for the rest of the test worker."""
    root = Path(__file__).resolve().parents[1]
    run = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
                          f"sys.exit(lint_imports(config_filename={str(root / 'pyproject.toml')!r}, no_cache=True))"],
                         capture_output=True, text=True, cwd=root,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(
                             filter(None, [str(root / "src"), os.environ.get("PYTHONPATH")]))})
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_package_loggers_stay_enabled_after_the_layer_checks():
    """The regression the subprocess above prevents: a logger disabled by a test's logging
    setup silences the fit's class lines in every later test of the worker."""
    import logging

    assert [name for name, logger in logging.root.manager.loggerDict.items()
            if name.startswith("polars_rap") and isinstance(logger, logging.Logger) and logger.disabled] == []
