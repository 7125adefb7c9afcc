"""The virtual environment of OpenDP's AIM peer (issue #20): ``bench/.venv-peers-opendp``.

OpenDP's Polars-native AIM (``opendp.extras.mbi``, opendp 0.16.0) needs a Polars of its own
(``polars==1.36.1``, pinned by its ``mbi`` extra) and mbi (the extra pins ``mbi==1.1.0``,
not 2.x), so it lives in its own venv (or the folder named by
``$POLARS_RAP_PEERS_OPENDP_VENV``), apart from both the project's and the smartnoise peers'
(``bench/.venv-peers``), and runs in a subprocess (``bench/peers_opendp_worker.py``, started
by ``bench/peers.py``'s ``run_peer``).

The install is ``opendp[mbi]==0.16.0`` plus ``pandas<3`` (mbi's ``Dataset.df``, which
``ContingencyTable.synthesize`` reads, needs it and the extra does not pull it), pinned with
the constraints below. Nothing in it depends on PyTorch; :func:`ensure_opendp_env` checks
that ``torch`` is neither installed nor imported.

    python bench/peers_opendp.py --ensure        # build / check the venv only
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

try:  # run as a module (bench.peers_opendp) or as a script (python bench/peers_opendp.py)
    from bench.venvs import build_venv, ensure_command, venv_ready
except ImportError:  # pragma: no cover - script use
    from venvs import build_venv, ensure_command, venv_ready

BENCH = Path(__file__).resolve().parent
WORKER = BENCH / "peers_opendp_worker.py"
OPENDP_VENV = Path(os.environ.get("POLARS_RAP_PEERS_OPENDP_VENV", BENCH / ".venv-peers-opendp"))
OPENDP_MECHANISMS = ("aim-opendp", "aim-opendp-fixed-sampler")

_STEP = ["opendp[mbi]==0.16.0", "pandas<3"]
_PINS = [  # what _STEP resolved to on 2026-11-23 (Python 3.11, pip 26.3); pip -c constraints
    "absl-py==2.5.1", "attrs==26.1.0", "chex==0.1.92", "cloudpickle==3.1.2", "Deprecated==1.3.1",
    "jax==0.10.2", "jaxlib==0.10.2", "joblib==1.6.0", "mbi==1.1.0", "ml_dtypes==0.6.0",
    "narwhals==2.29.0", "networkx==3.6.1", "numpy==2.4.6", "opendp==0.16.0", "opt_einsum==3.4.0",
    "optax==0.2.8", "pandas==2.3.3", "polars==1.36.1", "polars-runtime-32==1.36.1",
    "pyarrow==26.0.1", "python-dateutil==4.0.0", "pytz==2026.6", "randomgen==2.5.1",
    "scikit-learn==1.9.1", "scipy==1.17.1", "threadpoolctl==3.8.0", "toolz==1.2.0",
    "typing_extensions==4.16.0", "tzdata==2026.6", "wrapt==2.5.2",
]
_MARKER = "polars-rap-peers-opendp.json"
_CHECK = """
import importlib.util, sys
import opendp.prelude as dp
from opendp.extras.mbi import AIM, ContingencyTable, make_contingency_table
import mbi, polars
assert 'torch' not in sys.modules, 'opendp or mbi imported torch'
assert importlib.util.find_spec('torch') is None, 'torch is installed'
print('ok')
"""


def requested() -> dict:
    """What the marker must record for the venv to count as built: steps, pins, Python."""
    return {"step": _STEP, "pins": _PINS, "python": ".".join(map(str, sys.version_info[:2]))}


def opendp_env_ready(venv: Path | None = None) -> bool:
    """True when the venv exists and its marker says it holds :func:`requested`."""
    return venv_ready(Path(venv or OPENDP_VENV), _MARKER, requested())


def ensure_opendp_env(venv: Path | None = None) -> Path:
    """Create (if missing) the OpenDP peer's venv, install the pinned set; return its python.

    Idempotent (:func:`bench.venvs.build_venv`). Fails (CalledProcessError) if torch got in.
    """
    return build_venv(Path(venv or OPENDP_VENV), label="opendp peer", marker=_MARKER,
                      requested=requested(), pins=_PINS, constraints_name="peers-opendp-constraints.txt",
                      steps=[_STEP], check=_CHECK)


def main() -> int:
    return ensure_command(__doc__, ensure_opendp_env)


if __name__ == "__main__":
    raise SystemExit(main())
