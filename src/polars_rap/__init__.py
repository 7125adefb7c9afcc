"""polars-rap: differentially private synthetic data for mixed-type tables (RAP++).

Importing the package registers the ``dp`` namespace on Polars frames::

    >>> import polars as pl, polars_rap
    >>> hasattr(pl.DataFrame().dp, "synthesize")
    True
"""

from polars_rap.threads import limit_numba_threads

limit_numba_threads()  # before Numba is imported: no more kernel threads than the CPUs this process may use

from polars_rap import namespace as _namespace  # noqa: E402, F401  (registers df.dp / lf.dp)
from polars_rap.cli.config import Config, read_config
from polars_rap.schema.domain import Categorical, Domain, Numeric
from polars_rap.errors import DataError, ParameterError, ParameterTypeError
from polars_rap.pipeline.synthesis import synthesize
from polars_rap.pipeline.model import SyntheticModel, load
from polars_rap.privacy.ledger import BudgetExceededError
from polars_rap.fit.projection import ProjectionConfig
from polars_rap.fit.loop_settings import WorkloadSize
from polars_rap.fit.strategy import PaperStrategy, PlannedStrategy
from polars_rap.privacy.report import PrivacyReport
from polars_rap.pipeline.result import SynthesisResult

__all__ = [
    "synthesize",
    "SynthesisResult",
    "SyntheticModel",
    "load",
    "PrivacyReport",
    "Domain",
    "Categorical",
    "Numeric",
    "PlannedStrategy",
    "PaperStrategy",
    "WorkloadSize",
    "ProjectionConfig",
    "ParameterError",
    "ParameterTypeError",
    "DataError",
    "BudgetExceededError",
    "read_config",
    "Config",
]
__version__ = "0.1.0"
