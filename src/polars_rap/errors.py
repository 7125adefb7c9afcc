"""The errors polars-rap raises for bad input, split by whose input is wrong.

- :class:`ParameterError`: a bad setting, for the caller to fix in the call, the config file or
  the domain declaration (epsilon, rounds, a strategy, bounds with lower >= upper, a label
  that is not a column, a column without a declared domain, an unknown backend).
- :class:`ParameterTypeError`: a setting of the wrong Python type (a ``ParameterError`` that
  is also a ``TypeError``, as such errors were before the split).
- :class:`DataError`: bad data, found while reading it: a value outside the declared
  categories, a null or infinity where none is declared, a column whose dtype does not fit its
  declaration, a column the declaration names but the data lacks, no rows, or a saved model or
  report file that is corrupt. Its message is for the curator: it may describe the sensitive
  data, so it never enters a release.

All are ``ValueError`` subclasses, so ``except ValueError`` keeps working; the command line
maps them to distinct exit statuses (:mod:`polars_rap.cli.commands`). A charge over the privacy budget
is neither: :class:`polars_rap.privacy.ledger.BudgetExceededError`.

>>> import polars as pl, polars_rap
>>> try:
...     polars_rap.synthesize(pl.DataFrame({"x": [1.0]}), epsilon=-1.0, delta=1e-9)
... except polars_rap.ParameterError as error:
...     print(type(error).__name__, "|", error)
ParameterError | The 'epsilon' parameter must be a finite float > 0. Got -1.0
"""

from __future__ import annotations

import difflib
import sys
import warnings
from pathlib import Path

__all__ = ["ParameterError", "ParameterTypeError", "DataError"]


class ParameterError(ValueError):
    """A bad setting: a parameter, a domain declaration or a config entry."""


class ParameterTypeError(ParameterError, TypeError):
    """A setting of the wrong Python type (both a :class:`ParameterError` and a ``TypeError``)."""


class DataError(ValueError):
    """Data that do not fit their declared domain, or that cannot be read (the message is
    for the curator and never released)."""

def did_you_mean(unknown: list[str], valid) -> str:
    """``"; did you mean 'x'?"`` for the valid names closest to the unknown ones (difflib),
    or ``""`` when none is close.

    >>> did_you_mean(["rounds_tl"], ["rounds_lt", "rounds_mm", "seed"])
    "; did you mean 'rounds_lt'?"
    """
    close = [match for name in unknown for match in difflib.get_close_matches(name, list(valid), n=1, cutoff=0.6)]
    return f"; did you mean {' or '.join(repr(name) for name in dict.fromkeys(close))}?" if close else ""


_PACKAGE_DIR = str(Path(__file__).resolve().parent)


def warn_caller(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn with ``message``, attributed to the first caller outside polars-rap (the user's line
    that called ``synthesize``, however deep inside the pipeline the warning arises)."""
    level, frame = 2, sys._getframe(1)  # level 2: warn_caller's caller
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(_PACKAGE_DIR):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level)

