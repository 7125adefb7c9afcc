"""The command line's wording of library errors: fixes as config-file (TOML) lines.

The library's messages give their fixes in Python (``domain={'age': (lower, upper)}``,
``infer_domain=True``), which is what a caller of :func:`polars_rap.synthesize` types. At
the command line the same fix goes into the ``--config`` file: :func:`toml_hints` turns each
``domain={...}`` into the ``[domain.NAME]`` tables that say the same, to print under the
message (valid TOML: a value left to the user is a ``"TODO"``, as ``polars-rap init`` writes
it), and the keywords into their ``[options]`` or ``[domain]`` spelling.

>>> text, lines = toml_hints("column 'age' (Int64) has no public domain. Declare it in "
...                          "domain=, e.g. domain={'age': (lower, upper)} with values from public "
...                          "documentation, or learn it privately with infer_domain=True")
>>> text.split("domain. ")[1]
'Declare it in the config, e.g. with the lines below, with values from public documentation, or learn it privately with infer_domain = true in [options]; polars-rap init IN -o spec.toml writes a config template with a table per column'
>>> print("\\n".join(lines))
[domain.age]
kind = "numeric"
bounds = ["TODO", "TODO"]   # public [lower, upper]
"""

from __future__ import annotations

import ast
import re

from polars_rap.cli.config import TODO, toml_key, toml_value

__all__ = ["toml_hints"]

_LEAD = "in domain=, e.g. "
_KEYWORDS = (  # Python keyword spelling -> config spelling
    ("infer_domain=True", "infer_domain = true in [options]"),
    ("overwrite=True (--overwrite)", "--overwrite"),
    ("in domain= ", "in the config's [domain] tables "),
    ("in domain=,", "in the config's [domain] tables,"),
    ("Add None to its categories", "Declare its null category"),
)
_PLACEHOLDER = object()
"""A value a message leaves to the user (``lower``, ``...``): written as TODO, as init does."""
_MAX_TABLES = 5
"""Most ``[domain.NAME]`` tables one error prints; ``polars-rap init`` writes them all."""


def toml_hints(message: str) -> tuple[str, list[str]]:
    """``message`` with each Python ``domain={...}`` replaced by a pointer to the config
    lines that say the same, and those lines (``[domain.NAME]`` tables, a blank line between
    two), empty when the message has no such fix."""
    tables: list[list[str]] = []
    text, position = "", 0
    for match in re.finditer(r"domain=\{", message):
        end = _closing_brace(message, match.end() - 1)
        entries = _entries(message[match.end():end]) if match.start() >= position and end > 0 else []
        if not entries:
            continue
        tables += [_table(name, value) for name, value in entries]
        before = message[position:match.start()]
        if before.endswith(_LEAD):  # "Declare it in domain=, e.g. domain={...}"
            text += before[:-len(_LEAD)] + "in the config, e.g. with the lines below,"
        else:
            text += before + "the config lines below"
        position = end + 1
    text += message[position:]
    if re.search(r"ha(s|ve) no public domain", message):
        text += "; polars-rap init IN -o spec.toml writes a config template with a table per column"
    for python, config in _KEYWORDS:
        text = text.replace(python, config)
    text = re.sub(r"\bdrop=(\[[^\]]*\])", r"drop = \1 in [options]", text)  # a TOML list as Python writes it
    if len(tables) > _MAX_TABLES:
        more = len(tables) - _MAX_TABLES + 1
        tables = [*tables[:_MAX_TABLES - 1],
                  [f"# ... and {more} more: polars-rap init IN -o spec.toml writes a table for every column"]]
    lines = [line for i, table in enumerate(tables) for line in ([""] if i else []) + table]
    return text, lines


def _closing_brace(text: str, opening: int) -> int:
    """Index of the ``}`` that closes the ``{`` at ``opening`` (-1 when unbalanced)."""
    depth = 0
    for index in range(opening, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return index
    return -1


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas outside brackets and quotes."""
    parts, depth, quote, start = [], 0, None, 0
    for index, char in enumerate(text):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    parts.append(text[start:].strip())
    return [part for part in parts if part]


def _entries(body: str) -> list[tuple[str, str]]:
    """``('name', value text)`` of each ``'name': value`` in a dict literal's body."""
    entries = []
    for part in _split_top(body):
        match = re.fullmatch(r"""(['"])(.*?)\1\s*:\s*(.+)""", part, flags=re.S)
        if match is None:
            return []
        entries.append((match.group(2), match.group(3).strip()))
    return entries


def _table(name: str, value: str) -> list[str]:
    """The ``[domain.NAME]`` lines of one Python declaration (a tuple of bounds, a list of
    categories, a dict of ``bounds``/``categories``/``nullable``/``integer``)."""
    keys: dict[str, str] = {}
    if value.startswith("{"):
        for key, item in _entries(value[1:-1]):
            keys[key] = item
    elif value.startswith("("):
        keys["bounds"] = value
    else:
        keys["categories"] = value
    lines = [f"[domain.{toml_key(name)}]"]
    if "bounds" in keys:
        bounds = _items(keys["bounds"])
        if any(item is _PLACEHOLDER for item in bounds):
            lines += ['kind = "numeric"', f"bounds = {toml_value([TODO, TODO])}   # public [lower, upper]"]
        else:
            lines += ['kind = "numeric"', f"bounds = {toml_value(bounds)}"]
    elif "categories" in keys:
        items = _items(keys["categories"])
        if None in items:
            keys.setdefault("nullable", "True")
            items = [item for item in items if item is not None]
        if any(item is _PLACEHOLDER for item in items) and items != [_PLACEHOLDER]:
            lines += ['kind = "categorical"', f"categories = {toml_value([TODO])}   # every public category"]
        elif items != [_PLACEHOLDER]:  # "[..., None]" adds only the null category
            lines += ['kind = "categorical"', f"categories = {toml_value(items)}"]
    lines += [f"{key} = {keys[key].lower()}" for key in ("nullable", "integer") if key in keys]
    return lines


def _items(text: str) -> list:
    """The items of a Python tuple or list literal's text; a placeholder (``lower``,
    ``...``, ``class``) is :data:`_PLACEHOLDER`."""
    items = []
    for part in _split_top(text[1:-1]):
        try:
            value = ast.literal_eval(part)
        except (ValueError, SyntaxError):
            value = _PLACEHOLDER
        items.append(_PLACEHOLDER if value is Ellipsis else value)
    return items


