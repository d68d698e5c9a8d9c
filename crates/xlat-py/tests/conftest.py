"""Shared fixtures: the CLI binary, small experiments, a 2-worker Dask cluster."""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def xlat_cli() -> Path:
    """The `xlat` binary: $XLAT_BIN, else built with cargo (a no-op when scripts/test built it)."""
    if os.environ.get("XLAT_BIN"):
        return Path(os.environ["XLAT_BIN"])
    subprocess.run(["cargo", "build", "--quiet", "--locked", "-p", "xlat-cli"], cwd=REPO, check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return target / "debug" / "xlat"


@pytest.fixture(scope="session")
def small_experiment() -> Path:
    return DATA / "small.toml"


@pytest.fixture(scope="module")
def dask_client():
    """A LocalCluster of 2 worker processes, shared by a module's tests."""
    from dask.distributed import Client, LocalCluster
    import logging

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.ERROR) as cluster:
        with Client(cluster) as client:
            yield client
