"""Config files: the TOML the command line reads (labels, domain, privacy, options,
strategy) and the one ``polars-rap export`` writes.

:func:`read_config` turns a file into the keyword arguments of
:func:`polars_rap.synthesize` (a :class:`Config`); every mistake it finds is a
:class:`ConfigError` naming the file, the key and the fix, raised before any data is read.
:func:`config_text` writes a bundled task's config. The format::

    labels = ["PINCP_gt_50000"]      # categorical target columns (before the first [table])
    public = "other_states.parquet"  # optional: a public table as a prior (relative to this file)
    [privacy]                        # optional; --epsilon / --delta win
    epsilon = 1.0
    delta = 1e-9
    [domain.AGEP]                    # one table per column, as in polars_rap/data/*.toml
    kind = "numeric"
    bounds = [17, 99]
    nullable = false                 # the default; true keeps a null indicator
    integer = false                  # the default; true: whole numbers out (int dtypes imply it)
    [domain.PINCP]
    kind = "numeric"
    bounds = [0, 1500000]
    scale = "log"                    # "linear" (default), "log" or "sqrt": where thresholds go
    atoms = [0]                      # values many rows hold exactly, kept exactly
    [domain.BIRTH]
    kind = "numeric"                 # a date column: bounds (and atoms) are TOML dates
    bounds = [1900-01-01, 2025-12-31]
    [domain.SEX]
    kind = "categorical"
    categories = [1, 2]
    nullable = false
    [options]                        # keyword arguments of polars_rap.synthesize
    drop = ["id"]
    [constraints]                    # optional: public rules every output row keeps (SQL)
    hours_need_work = "WKHP IS NULL OR COW IS NOT NULL"
    total = "PINCP = WAGP + OTHER"   # column = expression: computed, not drawn
    [strategy]                       # optional: how the budget is spent, the loop's size
    name = "planned"                 # or "paper"; then the settings of polars_rap.PlannedStrategy
    relaxed_rows = 1000
    [strategy.rounds]                # rounds per query class
    LT = 10
    [strategy.workload]              # fields of polars_rap.WorkloadSize
    n_linear_thresholds = 20000
    [strategy.projection]            # fields of polars_rap.ProjectionConfig
    learning_rate = 0.05
"""

from __future__ import annotations

import datetime
import difflib
import inspect
import json
import math
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polars_rap.errors import ParameterError, ParameterTypeError, did_you_mean
from polars_rap.pipeline.arguments import MOVED_TO_STRATEGY

__all__ = ["Config", "ConfigError", "read_config", "config_text", "option_names", "toml_value", "TODO"]

CONFIG_TABLES = ("labels", "public", "privacy", "domain", "options", "strategy", "constraints")
COLUMN_KEYS = ("kind", "bounds", "categories", "nullable", "integer", "scale", "atoms", "note")
"""Keys of a ``[domain.NAME]`` table (``note`` is free text, as in the bundled spec files)."""
TODO = "TODO"
"""The placeholder ``polars-rap init`` writes where only a person can fill in public values."""
# Keywords of synthesize that the command line sets from elsewhere, and where.
SET_ELSEWHERE = {
    "epsilon": "--epsilon or [privacy] epsilon",
    "delta": "--delta or [privacy] delta",
    "domain": "the [domain] tables",
    "labels": "the top-level labels = [...]",
    "strategy": 'the [strategy] table (name = "planned" or "paper", and its settings)',
    "public": 'the top-level public = "path" (before the first [table])',
    "progress": "--quiet",
    "constraints": 'the [constraints] table (name = "SQL rule")',
}


class ConfigError(ParameterError):
    """A config file that cannot be used: unreadable, not TOML, an unknown key or option, a
    bad domain table (a :class:`~polars_rap.errors.ParameterError`). The command line exits
    with status 2 for it."""


@dataclass(frozen=True)
class Config:
    """A parsed config file: the keyword arguments it gives ``synthesize``.

    Attributes
    ----------
    labels : list of str
        The top-level ``labels`` (categorical target columns); empty when absent.
    domain : dict or None
        The ``domain=`` mapping of the ``[domain.NAME]`` tables (a category list, ``None``
        appended when nullable; ``(lo, hi)`` bounds, or ``{"bounds": ..., "nullable": True,
        "integer": True}``); None when the file declares no column.
    privacy : dict
        ``epsilon`` and ``delta`` from ``[privacy]``, where set.
    options : dict
        ``[options]``: further keyword arguments of :func:`polars_rap.synthesize`.
    strategy : strategy object or None
        ``[strategy]`` (its ``name``, default ``"planned"``, and settings; ``[strategy.rounds]``,
        ``[strategy.workload]`` and ``[strategy.projection]`` tables), made and checked when
        read; None when the file has none.
    public : str or None
        The top-level ``public``: the path of a public table used as a prior
        (``synthesize(public=...)``), made absolute (a relative path is relative to the
        config file's folder); None when absent. ``[options] public_use`` says how it is used.
    constraints : dict or None
        ``[constraints]``: rule name -> SQL rule (``synthesize(constraints=...)``,
        :mod:`polars_rap.decode.constraints`); None when absent.
    """

    labels: list[str]
    domain: dict[str, Any] | None
    privacy: dict[str, float]
    options: dict[str, Any]
    strategy: Any  # PlannedStrategy, PaperStrategy or None
    public: str | None = None
    constraints: dict[str, str] | None = None

    def keywords(self) -> dict[str, Any]:
        """The keyword arguments of :func:`polars_rap.synthesize` this file sets: ``domain``,
        ``labels``, ``[privacy]``'s ``epsilon``/``delta`` where given, ``strategy`` where
        given, and every ``[options]`` entry. ``synthesize(data, **config.keywords())``
        runs what ``polars-rap synthesize --config`` runs."""
        keywords: dict[str, Any] = {"domain": self.domain, "labels": list(self.labels), **self.privacy}
        if self.strategy is not None:
            keywords["strategy"] = self.strategy
        if self.public is not None:
            keywords["public"] = self.public
        if self.constraints:
            keywords["constraints"] = dict(self.constraints)
        return {**keywords, **self.options}


def option_names() -> list[str]:
    """The ``[options]`` keys: keyword parameters of ``synthesize`` not set elsewhere."""
    from polars_rap.pipeline.synthesis import synthesize

    parameters = inspect.signature(synthesize).parameters.values()
    return [p.name for p in parameters if p.kind is p.KEYWORD_ONLY and p.name not in SET_ELSEWHERE]


def read_config(path: str | os.PathLike[str] | None) -> Config:
    r"""Read and check the config file at ``path`` (the ``--config`` of the command line).

    Parameters
    ----------
    path : path-like or None
        A TOML file in the format of this module's docstring (``polars-rap export`` writes
        one for a bundled task, ``polars-rap init`` a template for any table). ``None``
        gives an empty config.

    Returns
    -------
    Config
        ``.domain``, ``.labels``, ``.privacy``, ``.options``, ``.strategy`` and ``.public``;
        ``config.keywords()`` passes them all to :func:`polars_rap.synthesize`.

    Raises
    ------
    ConfigError
        (a ``ValueError``) naming the file, the key and the fix: a missing file, invalid
        TOML, an unknown table, key or option (with the closest valid name), an option set
        elsewhere (``epsilon`` in ``[options]``), a bad ``[domain.NAME]`` table, or
        placeholders of ``polars-rap init`` still to fill in (every such column at once).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import polars_rap
    >>> lines = ['labels = ["sex"]', "[domain.age]", 'kind = "numeric"', "bounds = [18, 99]",
    ...          "[domain.sex]", 'kind = "categorical"', 'categories = ["F", "M"]',
    ...          "[options]", "seed = 7", "[strategy]", "relaxed_rows = 500"]
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = pathlib.Path(tmp) / "spec.toml"
    ...     _ = path.write_text("\n".join(lines))
    ...     config = polars_rap.read_config(path)
    >>> config.domain, config.labels, config.options, config.strategy.relaxed_rows
    ({'age': (18, 99), 'sex': ['F', 'M']}, ['sex'], {'seed': 7}, 500)
    >>> sorted(config.keywords())
    ['domain', 'labels', 'seed', 'strategy']
    """
    if path is None:
        return Config([], None, {}, {}, None)
    path = os.fspath(path)
    config_path = Path(path)
    if not config_path.is_file():
        msg = f"no config file at {path!r}"
        raise ConfigError(msg)
    try:
        raw = tomllib.loads(config_path.read_text("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        msg = f"config {path!r} is not valid TOML: {error}"
        raise ConfigError(msg) from error
    if "projection" in raw:
        msg = (f"config {path!r}: the [projection] table is now [strategy.projection] (the optimiser is a "
               "setting of the strategy): rename it")
        raise ConfigError(msg)
    unknown = sorted(set(raw) - set(CONFIG_TABLES))
    if unknown:
        msg = (f"config {path!r} has unknown keys {unknown}; valid top-level keys are "
               f"{list(CONFIG_TABLES)}{did_you_mean(unknown, CONFIG_TABLES)}")
        raise ConfigError(msg)
    labels = raw.get("labels", [])
    if isinstance(labels, str):
        labels = [labels]
    if not (isinstance(labels, list) and all(isinstance(label, str) for label in labels)):
        msg = f"config {path!r}: labels must be a list of column names, e.g. labels = [\"income\"]. Got {labels!r}"
        raise ConfigError(msg)
    return Config(
        labels=labels,
        domain=_config_domain(_table(raw, "domain", path), labels, path),
        privacy=_config_privacy(_table(raw, "privacy", path), path),
        options=_config_options(_table(raw, "options", path), path),
        strategy=_config_strategy(raw.get("strategy"), path),
        public=_config_public(raw.get("public"), config_path),
        constraints=_config_constraints(_table(raw, "constraints", path), path),
    )


def _config_public(value: Any, config_path: Path) -> str | None:
    """The top-level ``public`` as an absolute path (relative to the config file's folder)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        msg = (f"config {str(config_path)!r}: public must be the path of a public table, e.g. "
               f'public = "public.parquet" (before the first [table]). Got {value!r}')
        raise ConfigError(msg)
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (config_path.parent / path).resolve())


def _config_constraints(table: dict[str, Any], path: str) -> dict[str, str] | None:
    """``[constraints]``: each entry a rule's name and its SQL text (checked against the domain
    when the synthesis builds it)."""
    bad = [name for name, rule in table.items() if not isinstance(rule, str) or not rule.strip()]
    if bad:
        msg = (f"config {path!r}: [constraints] {bad[0]} must be a rule in SQL text, e.g. "
               f'{toml_key(bad[0])} = "start_date <= end_date". Got {table[bad[0]]!r}')
        raise ConfigError(msg)
    return dict(table) or None


def _table(raw: dict[str, Any], name: str, path: str) -> dict[str, Any]:
    table = raw.get(name, {})
    if not isinstance(table, dict):
        msg = f"config {path!r}: {name} must be a table ([{name}]). Got {table!r}"
        raise ConfigError(msg)
    return table


def _config_domain(tables: dict[str, Any], labels: list[str], path: str) -> dict[str, Any] | None:
    """The ``domain=`` mapping of ``[domain.NAME]`` tables, checked by the bundled-spec parser."""
    from polars_rap.io import datasets

    if not tables:
        return None
    not_tables = [name for name, table in tables.items() if not isinstance(table, dict)]
    if not_tables:
        msg = (
            f"config {path!r}: each column needs its own table, e.g. [domain.{not_tables[0]}] "
            f"with kind, bounds or categories, nullable, integer, scale, atoms; found plain values for {not_tables}"
        )
        raise ConfigError(msg)
    for name, table in tables.items():
        unknown = sorted(set(table) - set(COLUMN_KEYS))
        if unknown:
            msg = (f"config {path!r}: [domain.{toml_key(name)}] has unknown keys {unknown}; valid keys "
                   f"are {list(COLUMN_KEYS)}{did_you_mean(unknown, COLUMN_KEYS)}")
            raise ConfigError(msg)
    placeholders = [name for name, table in tables.items() if _holds_todo(table)]
    if placeholders:
        msg = (
            f"config {path!r}: {', '.join(repr(n) for n in placeholders)} still "
            f"{'holds' if len(placeholders) == 1 else 'hold'} {TODO} placeholders (as polars-rap init "
            "writes them): give each its kind and public bounds or categories, from documentation, "
            "never from the data"
        )
        raise ConfigError(msg)
    declared_labels = [label for label in labels if label in tables]
    try:
        return datasets.domain_from_tables(tables, declared_labels, path)
    except ValueError as error:
        raise ConfigError(str(error).replace("spec file", "config")) from error


def _config_privacy(table: dict[str, Any], path: str) -> dict[str, float]:
    unknown = sorted(set(table) - {"epsilon", "delta"})
    if unknown:
        msg = (f"config {path!r}: [privacy] has unknown keys {unknown}; valid keys are ['epsilon', 'delta']"
               f"{_misplaced_hint(unknown)}{did_you_mean(unknown, ['epsilon', 'delta'])}")
        raise ConfigError(msg)
    return dict(table)


def _config_options(table: dict[str, Any], path: str) -> dict[str, Any]:
    valid = option_names()
    for name in table:
        if name in SET_ELSEWHERE:
            msg = f"config {path!r}: set {name!r} with {SET_ELSEWHERE[name]}, not in [options]"
            raise ConfigError(msg)
        if name in MOVED_TO_STRATEGY:
            msg = f"config {path!r}: {name!r} is a setting of the strategy now: set {MOVED_TO_STRATEGY[name][1]}"
            raise ConfigError(msg)
        if name not in valid:
            hint = did_you_mean([name], valid)
            moved = difflib.get_close_matches(name, list(MOVED_TO_STRATEGY), n=1, cutoff=0.75)
            if moved and not hint:
                hint = (f"; did you mean {moved[0]!r}, a setting of the strategy now: "
                        f"set {MOVED_TO_STRATEGY[moved[0]][1]}")
            msg = (f"config {path!r}: unknown option {name!r} in [options]; valid options are "
                   f"{valid}{_misplaced_hint([name])}{hint}")
            raise ConfigError(msg)
    return dict(table)


def _holds_todo(table: dict[str, Any]) -> bool:
    """Whether a column table still holds a :data:`TODO` placeholder (alone or in a list;
    ``note`` is free text and not looked at)."""
    values = [value for key, value in table.items() if key != "note"]
    return any(v == TODO for value in values for v in (value if isinstance(value, list) else [value]))


def _misplaced_hint(keys: list[str]) -> str:
    """TOML puts every key after ``[table]`` into that table: say so when a top-level key lands there."""
    if any(key in CONFIG_TABLES for key in keys):
        return "; top-level keys such as labels must come before the first [table] of the file"
    return ""


def _config_strategy(table: Any, path: str) -> Any:
    """The ``[strategy]`` table as a strategy object (:func:`polars_rap.fit.strategy.resolve_strategy`
    of its mapping), or None when absent; a bad setting is a :class:`ConfigError` naming it."""
    from polars_rap.fit.strategy import resolve_strategy

    if table is None:
        return None
    if not isinstance(table, dict):
        msg = f'config {path!r}: strategy must be a table ([strategy]) with name = "planned" or "paper" and settings'
        raise ConfigError(msg)
    try:
        return resolve_strategy(table)
    except (TypeError, ValueError) as error:
        msg = f"config {path!r}: [strategy]: {error}"
        raise ConfigError(msg) from error


# ---------------------------------------------------------------- writing (export)
OPTIONAL_TABLES = (
    "# [privacy]          # or --epsilon / --delta on the command line",
    "# epsilon = 1.0",
    "# delta = 1e-9",
    "# [options]          # keyword arguments of polars_rap.synthesize",
    '# drop = ["id"]      # columns to leave out (identifiers, weights): never read, not in the output',
    "# [constraints]      # public rules every output row keeps, in SQL: name = \"rule\"",
    '# order = "start_date <= end_date"   # a row breaking it is redrawn',
    '# total = "total = wages + other"    # column = expression: the column is computed',
    "# [strategy]         # how the budget is spent and the loop's size: polars_rap.PlannedStrategy's settings",
    "# relaxed_rows = 1000",
)
"""The tables a written config leaves commented out, for its reader to fill in."""


def config_text(task) -> str:
    """A config file for ``task``: its labels and one ``[domain.NAME]`` table per column."""
    lines = [
        f"# polars-rap synthesize config for the task {task.name!r} (polars-rap export).",
        "# The domain comes from public documentation (see polars_rap/data/*.toml), never from the data.",
        f"labels = {toml_value(list(task.labels))}",
        "",
        *OPTIONAL_TABLES,
        "",
    ]
    for name, table in task.columns_spec.items():
        lines.append(f"[domain.{toml_key(name)}]")
        lines += [f"{toml_key(key)} = {toml_value(value)}" for key, value in table.items()]
        lines.append("")
    return "\n".join(lines)


def toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def toml_value(value: Any) -> str:
    """A TOML literal of a str, bool, int, finite float, date, datetime or list of them (JSON
    escapes are TOML's).

    >>> import datetime
    >>> toml_value([datetime.date(1990, 1, 1), 2.5, "a"])
    '[1990-01-01, 2.5, "a"]'
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.date):  # TOML local dates and (local or offset) datetimes
        return value.isoformat()
    if isinstance(value, (int, str)) or (isinstance(value, float) and math.isfinite(value)):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    msg = f"cannot write {value!r} as a TOML value"
    raise ParameterTypeError(msg)
