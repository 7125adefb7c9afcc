"""dpmm's peers (issue #74): AIM, MST and PrivBayes from ``dpmm`` 0.1.9, with PrivTree binning.

dpmm (``pip install dpmm``) runs a whole pipeline on a pandas frame: a ``TableBinner`` that
bins every numeric column with PrivTree (a private, data-adaptive binning) and ordinal-codes
the categorical ones, then a graphical model (AIM, MST or PrivBayes, on its own copy of an
old private-pgm). It needs NumPy < 2 (it pins ``numpy==1.26.4``, ``pandas==2.1.0``,
``opendp==0.12.1``), so it lives in its own venv ``bench/.venv-peers-dpmm`` (or the folder named
by ``$POLARS_RAP_PEERS_DPMM_VENV``) with ``pyarrow<17`` for Parquet, and runs in a subprocess
(``bench/peers_dpmm_worker.py``, started by ``bench/peers.py``'s ``run_peer``). Nothing in it
depends on PyTorch; :func:`ensure_dpmm_env` checks that ``torch`` is neither installed nor
imported.

**Raw columns, public domain.** dpmm's pipeline takes a public domain (``{"col": {"lower":
.., "upper": ..}}`` or ``{"col": {"categories": [...]}}``), so it gets the RAW columns, not the
binned codes of the other peers: :func:`to_dpmm` writes each categorical column as the string
``"k<i>"`` of its index in the declared category list (all codes declared, so no category is
read off the rows) and each numeric column as Float64 clipped to the declared bounds (which
dpmm's binner then uses: no budget goes to finding bounds). A nullable numeric column gets a
declared ``no``/``yes`` indicator column of ours and its nulls a fixed public fill (the lower
bound), because dpmm's own null handling is data-dependent (it adds the indicator only when
the rows hold nulls and fills with a value sampled from the rows). :func:`from_dpmm` decodes.

**PrivTree spends budget.** PrivTree splits a numeric column's declared range where the
rows are dense, with Laplace noise: with bounds declared, dpmm gives each numeric column an
equal share ``ε_bin / k`` of its ``proc_epsilon`` as pure DP under add/remove. The harness's
bins value is PrivTree's most leaves (``n_bins``, ``enforce_bins=True``).

**Privacy: ρ-zCDP under replace-one, as polars-rap** (:func:`plan_budget`). ρ = ρ(ε, δ) of
polars-rap's tight conversion (the one rap++ spends). A share :data:`BINNING_SHARE` of ρ goes
to binning when there is a numeric column: ε-DP under add/remove is 2ε-DP under replace-one
(group privacy), hence 2ε²-zCDP; k columns at ε_bin / k each cost 2 ε_bin² / k, so ε_bin =
sqrt(k ρ_bin / 2). The rest, ρ_model, goes to the model, whose add/remove budget dpmm derives
from (ε, δ) with its own ``cdp_rho``; the worker overrides it after construction:

* AIM: ρ' = ρ_model / 2.2 (as ``aim-replace-one``: 0.9 of every round on Gaussian counts, L2
  sensitivity √2 under replace-one, twice ρ; 0.1 on exponential-mechanism selections whose
  score moves by 2w, four times ρ);
* MST: ρ' = 3 ρ_model / 8 (a third each on one-way counts, selection and two-way counts:
  2/3 + 4/3 + 2/3 = 8/3 times ρ' under replace-one), σ = sqrt(3 / (2ρ'));
* PrivBayes: half of ρ_model on the d-1 exponential-mechanism selections, half on the
  Gaussian counts (ρ' = ρ_model / 4, twice that under replace-one). dpmm scores a parent set
  by MUTUAL INFORMATION NORMALISED by sqrt(H(X) H(Π)) (in bits) but calibrates with the
  sensitivity of plain MI in nats (≈ 2 log(n) / n); the normalised score can move from 0 to
  1 when one row is replaced (a column constant but for that row), so as shipped the selection
  is not private at its stated budget. The worker sets the score's sensitivity to 1 (its range
  is [0, 1]), which holds under any neighbours, and each selection's ε_i = sqrt(8 ρ_sel /
  (d-1)) (bounded range: ε_i²/8-zCDP).

    python bench/peers_dpmm.py --ensure        # build / check the venv only
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from polars_rap.schema.domain import Domain

try:  # run as a module (bench.peers_dpmm) or as a script (python bench/peers_dpmm.py)
    from bench.peer_frames import dtype_from, dtype_name
    from bench.venvs import build_venv, ensure_command, venv_ready
except ImportError:  # pragma: no cover - script use
    from peer_frames import dtype_from, dtype_name
    from venvs import build_venv, ensure_command, venv_ready

BENCH = Path(__file__).resolve().parent
WORKER = BENCH / "peers_dpmm_worker.py"
DPMM_VENV = Path(os.environ.get("POLARS_RAP_PEERS_DPMM_VENV", BENCH / ".venv-peers-dpmm"))
DPMM_MECHANISMS = ("dpmm-aim", "dpmm-mst", "dpmm-privbayes")

BINNING_SHARE = 0.1
"""Share of ρ spent on PrivTree binning when the table has a numeric column (dpmm's default is
``proc_epsilon=0.1`` beside the model's ``epsilon=1``, about a tenth)."""
AIM_REPLACE_ONE_COST = 2.2
MST_REPLACE_ONE_COST = 8.0 / 3.0
PRIVBAYES_SELECTION_SHARE = 0.5
AIM_MAX_MODEL_SIZE_MB = 80
"""AIM's model cap (mbi's and OpenDP's default; dpmm's pipeline passes none)."""

_STEP = ["dpmm==0.1.9", "numpy<2", "pyarrow<17"]
_PINS = [  # what _STEP resolved to on 2026-12-06 (Python 3.11, pip 26.3); pip -c constraints
    "cloudpickle==3.1.3", "Deprecated==1.3.1", "disjoint-set==0.7.4", "dpmm==0.1.9", "joblib==1.6.0",
    "networkx==2.8.8", "numpy==1.26.4", "opendp==0.12.1", "pandas==2.1.0", "pyarrow==16.1.0",
    "python-dateutil==4.0.0", "pytz==2026.6", "scikit-learn==1.5.0", "scipy==1.17.1",
    "threadpoolctl==3.8.0", "tqdm==4.70.1", "tzdata==2026.6", "wrapt==2.5.2",
]
_MARKER = "polars-rap-peers-dpmm.json"
_CHECK = """
import importlib.util, sys
from dpmm.pipelines import AIMPipeline, MSTPipeline, PrivBayesPipeline
from dpmm.models.priv_bayes import ExponentialMechanism
import pandas, pyarrow
assert 'torch' not in sys.modules, 'dpmm imported torch'
assert importlib.util.find_spec('torch') is None, 'torch is installed'
print('ok')
"""


def requested() -> dict:
    """What the marker must record for the venv to count as built: steps, pins, Python."""
    return {"step": _STEP, "pins": _PINS, "python": ".".join(map(str, sys.version_info[:2]))}


def dpmm_env_ready(venv: Path | None = None) -> bool:
    """True when the venv exists and its marker says it holds :func:`requested`."""
    return venv_ready(Path(venv or DPMM_VENV), _MARKER, requested())


def ensure_dpmm_env(venv: Path | None = None) -> Path:
    """Create (if missing) dpmm's venv, install the pinned set; return its python.

    Idempotent (:func:`bench.venvs.build_venv`). Fails (CalledProcessError) if torch got in.
    """
    return build_venv(Path(venv or DPMM_VENV), label="dpmm peer", marker=_MARKER,
                      requested=requested(), pins=_PINS, constraints_name="peers-dpmm-constraints.txt",
                      steps=[_STEP], check=_CHECK)


# ============================================================================================
# The budget
# ============================================================================================


def plan_budget(model: str, rho: float, n_columns: int, n_numeric: int,
                binning_share: float = BINNING_SHARE) -> dict[str, Any]:
    """How dpmm's ``model`` (``"aim"``, ``"mst"``, ``"privbayes"``) spends ``rho`` (zCDP under
    replace-one) on a table of ``n_columns`` columns handed to dpmm, ``n_numeric`` of them
    numeric (binned by PrivTree). Returns a JSON-able plan: the replace-one split
    (``rho_binning`` + ``rho_model`` = ``rho``), ``binning_epsilon`` (dpmm's ``proc_epsilon``,
    pure DP under add/remove over all numeric columns, None without one) and ``model``: the
    attributes the worker sets on dpmm's mechanism (add/remove terms, see the module docstring).

    >>> plan_budget("aim", 0.1, 4, 0)["model"]["rho"] == 0.1 / 2.2
    True
    """
    if not (rho > 0 and math.isfinite(rho)):
        msg = f"rho must be a positive finite float. Got {rho!r}"
        raise ValueError(msg)
    if n_columns < 1 or not 0 <= n_numeric <= n_columns:
        msg = f"need 1 <= n_columns and 0 <= n_numeric <= n_columns. Got {n_columns}, {n_numeric}"
        raise ValueError(msg)
    if not 0 < binning_share < 1:
        msg = f"binning_share must be in (0, 1). Got {binning_share!r}"
        raise ValueError(msg)
    rho_binning = rho * binning_share if n_numeric else 0.0
    rho_model = rho - rho_binning
    binning_epsilon = math.sqrt(n_numeric * rho_binning / 2.0) if n_numeric else None
    if model == "aim":
        settings = {"rho": rho_model / AIM_REPLACE_ONE_COST, "max_model_size": AIM_MAX_MODEL_SIZE_MB}
    elif model == "mst":
        add_remove = rho_model / MST_REPLACE_ONE_COST
        settings = {"rho": add_remove, "sigma": math.sqrt(3.0 / (2.0 * add_remove))}
    elif model == "privbayes":
        selections = n_columns - 1
        rho_selection = rho_model * PRIVBAYES_SELECTION_SHARE if selections else 0.0
        add_remove = (rho_model - rho_selection) / 2.0  # Gaussian counts: twice ρ' under replace-one
        per_selection = math.sqrt(8.0 * rho_selection / selections) if selections else 0.0
        # dpmm's selection uses ε_i = (epsilon / 2) / d with the score sensitivity we set to 1
        settings = {"rho": add_remove, "sigma": math.sqrt(1.0 / (2.0 * add_remove)),
                    "epsilon": 2.0 * n_columns * per_selection, "selection_epsilon_each": per_selection,
                    "score_sensitivity": 1.0, "rho_selection": rho_selection}
    else:
        msg = f"model must be 'aim', 'mst' or 'privbayes'. Got {model!r}"
        raise ValueError(msg)
    return {"model_name": model, "rho": rho, "rho_binning": rho_binning, "rho_model": rho_model,
            "binning_epsilon": binning_epsilon, "binning_share": binning_share if n_numeric else 0.0,
            "n_numeric": n_numeric, "n_columns": n_columns, "model": settings}


def replace_one_rho(plan: Mapping[str, Any]) -> float:
    """The zCDP cost under replace-one of a :func:`plan_budget` plan, recomputed from what the
    worker hands dpmm (a check: it must come back to ``plan["rho"]``)."""
    k = plan["n_numeric"]
    binning = 2.0 * plan["binning_epsilon"] ** 2 / k if k else 0.0
    model = plan["model"]
    if plan["model_name"] == "aim":
        return binning + AIM_REPLACE_ONE_COST * model["rho"]
    if plan["model_name"] == "mst":
        return binning + MST_REPLACE_ONE_COST * model["rho"]
    d = plan["n_columns"]
    each = model["epsilon"] / (2.0 * d)  # what dpmm's selection spends per pick (sensitivity 1)
    return binning + 2.0 * model["rho"] + (d - 1) * each**2 / 8.0


# ============================================================================================
# Raw columns with the public domain, and back
# ============================================================================================

NULL_FLAG = ("no", "yes")
"""The categories of the indicator column a nullable numeric column gets (declared)."""


def _code(index: int) -> str:
    return f"k{index}"


def to_dpmm(frame: pl.DataFrame, domain: Mapping | Domain) -> tuple[pl.DataFrame, dict, dict]:
    """``frame`` as dpmm reads it, with only the PUBLIC ``domain``: (data, dpmm_domain, spec).

    Columns are renamed ``col0``, ``col1``... (positional). A categorical column becomes the
    string ``"k<i>"`` of its index in the declared categories (the null, when declared, the
    last index); dpmm_domain lists every code. A numeric column becomes Float64 clipped to its
    declared bounds, dpmm_domain gives them as ``lower`` / ``upper``; a nullable one adds the
    column ``col<i>_null`` (``"no"`` / ``"yes"``, declared) and its nulls hold the lower bound.
    ``spec`` (JSON-able) is what :func:`from_dpmm` needs, plus ``n_numeric``.
    """
    parsed = domain if isinstance(domain, Domain) else Domain.from_mapping(frame.schema, domain)
    series_out: list[pl.Series] = []
    dpmm_domain: dict[str, dict] = {}
    columns = []
    for position, spec in enumerate(parsed.columns):
        name, series = f"col{position}", frame[spec.name]
        entry: dict[str, Any] = {"name": spec.name, "column": name, "kind": spec.kind,
                                 "dtype": dtype_name(series.dtype), "nullable": spec.nullable}
        if spec.is_temporal:
            msg = f"column {spec.name!r}: temporal columns are not mapped for dpmm"
            raise ValueError(msg)
        if spec.is_categorical:
            cats = list(spec.categories)
            index = series.replace_strict(cats, list(range(len(cats))), default=None, return_dtype=pl.Int64)
            unlisted = index.is_null() & series.is_not_null()
            if unlisted.any() and spec.unlisted != "null":
                bad = series.filter(unlisted).unique().head(5).to_list()
                msg = f"column {spec.name!r} holds values outside its declared categories, e.g. {bad}"
                raise ValueError(msg)
            if index.null_count() and not spec.nullable:
                msg = f"column {spec.name!r} holds nulls but its domain declares none"
                raise ValueError(msg)
            index = index.fill_null(len(cats))
            series_out.append(("k" + index.cast(pl.String)).alias(name))
            dpmm_domain[name] = {"categories": [_code(i) for i in range(spec.n_codes)]}
            entry.update(categories=cats)
        else:
            lower, upper = float(spec.lower), float(spec.upper)
            values = series.cast(pl.Float64)
            is_null = values.is_null() | values.is_nan()
            if is_null.any() and not spec.nullable:
                msg = f"column {spec.name!r} holds nulls but its domain declares none"
                raise ValueError(msg)
            values = pl.select(pl.when(is_null).then(lower).otherwise(values.clip(lower, upper))).to_series()
            series_out.append(values.alias(name))
            dpmm_domain[name] = {"lower": lower, "upper": upper}
            entry.update(lower=lower, upper=upper, integer=spec.is_integer)
            if spec.nullable:
                flag = f"{name}_null"
                series_out.append(pl.select(pl.when(is_null).then(pl.lit(NULL_FLAG[1]))
                                            .otherwise(pl.lit(NULL_FLAG[0]))).to_series().alias(flag))
                dpmm_domain[flag] = {"categories": list(NULL_FLAG)}
                entry["null_column"] = flag
        columns.append(entry)
    n_numeric = sum(c["kind"] != "categorical" for c in columns)
    spec_out = {"format": 1, "columns": columns, "n_numeric": n_numeric, "n_columns": len(series_out)}
    return pl.DataFrame(series_out), dpmm_domain, spec_out


def from_dpmm(data: pl.DataFrame, spec: Mapping) -> pl.DataFrame:
    """Decode dpmm's synthetic rows (:func:`to_dpmm`'s columns) to the original names, order
    and dtypes: ``"k<i>"`` to the i-th declared category (past the list: null); a numeric
    value clipped to the public bounds (integers: rounded, inside the integer bounds); null
    where its indicator reads ``"yes"``."""
    out = []
    for entry in spec["columns"]:
        column = data[entry["column"]]
        dtype = dtype_from(entry["dtype"], entry.get("categories", []))
        if entry["kind"] == "categorical":
            cats = entry["categories"]
            index = column.cast(pl.String).str.strip_prefix("k").cast(pl.Int64, strict=False)
            if index.is_null().any() or (index < 0).any() or (index > len(cats)).any():
                msg = f"column {entry['name']!r}: dpmm returned codes outside the declared ones"
                raise ValueError(msg)
            values = [cats[i] if i < len(cats) else None for i in index.to_list()]
            series = pl.Series(entry["name"], values, strict=False)
            series = series.cast(dtype) if series.dtype != pl.Null else pl.Series(entry["name"], values, dtype=dtype)
        else:
            lower, upper = entry["lower"], entry["upper"]
            values = column.cast(pl.Float64).fill_nan(None).fill_null(lower).clip(lower, upper)
            if entry["integer"]:
                values = values.round().clip(math.ceil(lower), math.floor(upper))
            if "null_column" in entry:
                is_null = data[entry["null_column"]].cast(pl.String) == NULL_FLAG[1]
                values = pl.select(pl.when(is_null).then(None).otherwise(values)).to_series()
            series = values.cast(dtype).alias(entry["name"])
        out.append(series.alias(entry["name"]))
    return pl.DataFrame(out)


def main() -> int:
    return ensure_command(__doc__, ensure_dpmm_env)


if __name__ == "__main__":
    raise SystemExit(main())
