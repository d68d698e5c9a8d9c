"""Sweeps on Dask: equal to serial runs, resumable, failures reported, workers lost."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

import xlat
from xlat import paths

BASE = {
    "seed": 3,
    "workload": [
        {"name": "uniform", "type": "uniform", "footprint": "64MiB", "refs": 200_000},
        {"name": "zipf", "type": "zipf", "footprint": "64MiB", "refs": 200_000},
    ],
    "machine": [
        {"name": "vanilla", "preset": "single-tlb", "entries": 64, "ways": 4},
        {"name": "mosaic", "preset": "mosaic-paper", "ways": 4, "os": {"placement": "iceberg"}, "mosaic": [{"arity": [4], "ways": 4}]},
    ],
}
# 8 cells; 4 tasks: each of the 2 footprints of each of the 2 workloads feeds 4 cells' machines.
GRID = {"workload.footprint": ["32MiB", "64MiB"], "machine.ways": [1, 2, 4, 8]}


def _cell_rows(frame, cell, grid=GRID):
    return frame[frame["cell"] == cell.id].drop(columns=[*grid, "cell", "error"]).reset_index(drop=True)


def test_a_sweep_on_two_workers_equals_serial_runs_cell_by_cell(dask_client, tmp_path):
    frame = xlat.sweep(BASE, GRID, client=dask_client, out=tmp_path)
    cells = xlat.cells(BASE, GRID)
    assert len(cells) == 8 and frame["cell"].nunique() == 8
    assert frame["error"].isna().all()
    for cell in cells:
        serial = xlat.run(cell.config).frame()
        pd.testing.assert_frame_equal(_cell_rows(frame, cell), serial, check_dtype=False)
        assert (frame.loc[frame["cell"] == cell.id, "machine.ways"] == cell.params["machine.ways"]).all()
    written = pd.read_parquet(tmp_path / "results.parquet")
    pd.testing.assert_frame_equal(written, frame, check_dtype=False)
    summary = pd.read_parquet(tmp_path / "cells.parquet")
    assert list(summary["status"]) == ["done"] * 8
    assert [json.loads(c) for c in summary["config"]] == [c.config for c in cells]


class _Counting:
    """A client that records the cells and workloads of the tasks submitted to it."""

    def __init__(self, client):
        self.client, self.cells, self.workloads = client, set(), []

    def submit(self, fn, base_dir, experiment, cells, **kwargs):
        self.cells |= {cell_id for cell_id, _ in cells}
        self.workloads.append(experiment["workload"][0]["name"])
        return self.client.submit(fn, base_dir, experiment, cells, **kwargs)


def test_each_workload_is_one_task_feeding_every_cell_s_machines(dask_client):
    counting = _Counting(dask_client)
    xlat.sweep(BASE, {"machine.ways": [1, 2, 4, 8]}, client=counting)
    assert sorted(counting.workloads) == ["uniform", "zipf"]
    assert len(counting.cells) == 4


def test_a_rerun_skips_finished_cells(dask_client, tmp_path):
    first = xlat.sweep(BASE, GRID, client=dask_client, out=tmp_path)
    counting = _Counting(dask_client)
    again = xlat.sweep(BASE, GRID, client=counting, out=tmp_path)
    assert counting.cells == set()
    pd.testing.assert_frame_equal(again, first)
    # A cell whose result is missing (the sweep crashed before it finished) runs again, alone.
    lost = xlat.cells(BASE, GRID)[5]
    (tmp_path / "cells" / f"{lost.id}.parquet").unlink()
    resumed = xlat.sweep(BASE, GRID, client=counting, out=tmp_path)
    assert counting.cells == {lost.id}
    pd.testing.assert_frame_equal(resumed, first)


def test_a_failed_cell_is_reported_with_its_error(dask_client, tmp_path):
    grid = {"machine[vanilla].entries": [64, 0, 48]}
    frame = xlat.sweep(BASE, grid, client=dask_client, out=tmp_path)
    failed = frame[frame["error"].notna()]
    assert list(failed["machine[vanilla].entries"]) == [0]
    assert failed["error"].iloc[0].startswith("ValueError: machine[0].entries")
    # The cells beside it in its task are whole.
    for cell in xlat.cells(BASE, grid):
        if cell.params["machine[vanilla].entries"] != 0:
            pd.testing.assert_frame_equal(_cell_rows(frame, cell, grid), xlat.run(cell.config).frame(), check_dtype=False)
    summary = pd.read_parquet(tmp_path / "cells.parquet")
    assert list(summary["status"]) == ["done", "failed", "done"]


def test_a_worker_killed_mid_sweep_leaves_the_sweep_complete(tmp_path):
    from dask.distributed import Client, LocalCluster
    import logging

    base = {**BASE, "workload": [{"name": "long", "type": "uniform", "footprint": "256MiB", "refs": 6_000_000}]}
    grid = {"workload.seed": [1, 2], "machine.ways": [2, 4]}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.CRITICAL) as cluster:
        with Client(cluster) as client:
            killed = []

            def kill_a_busy_worker():
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline and not killed:
                    busy = [w for w, tasks in client.processing().items() if tasks]
                    if busy:
                        time.sleep(0.3)  # well into the task
                        pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
                    time.sleep(0.05)

            killer = threading.Thread(target=kill_a_busy_worker)
            killer.start()
            frame = xlat.sweep(base, grid, client=client, out=tmp_path)
            killer.join()
    assert killed, "no worker was killed: the test proved nothing"
    cells = xlat.cells(base, grid)
    assert frame["cell"].nunique() == len(cells)
    for cell in cells:
        error = frame.loc[frame["cell"] == cell.id, "error"].iloc[0]
        if error is not None:  # Dask gave up on the task: the cell says so
            assert "KilledWorker" in error
        else:
            pd.testing.assert_frame_equal(_cell_rows(frame, cell, grid), xlat.run(cell.config).frame(), check_dtype=False)


def test_python_m_xlat_sweep(tmp_path):
    experiment = tmp_path / "base.toml"
    experiment.write_text(
        '[[workload]]\nname = "u"\ntype = "uniform"\nfootprint = "16MiB"\nrefs = 50000\n'
        '[[machine]]\nname = "m"\npreset = "single-tlb"\nentries = 64\nways = 4\n'
    )
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text('experiment = "base.toml"\n[grid]\n"machine.entries" = [32, 64]\n"machine[m].ways" = [2, 4]\n')
    run = subprocess.run([sys.executable, "-m", "xlat", "sweep", sweep_file, "--out", tmp_path / "out", "--workers", "2", "--quiet"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "4 of 4 cells done" in run.stderr
    frame = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert sorted(set(zip(frame["machine.entries"], frame["machine[m].ways"]))) == [(32, 2), (32, 4), (64, 2), (64, 4)]
    sweep_file.write_text('experiment = "base.toml"\ngrid = { "machine.entries" = 5 }\n')
    bad = subprocess.run([sys.executable, "-m", "xlat", "sweep", sweep_file, "--out", tmp_path / "out2"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and "give a list of values" in bad.stderr


def test_field_paths_address_every_table_one_by_index_or_by_name():
    doc = {"machine": [{"name": "a", "mosaic": [{"arity": 4}, {"arity": 8}]}, {"name": "b", "mosaic": {"arity": 2}}], "seed": 1}
    paths.assign(doc, "machine.mosaic.arity", 16)
    assert [m["arity"] for m in doc["machine"][0]["mosaic"]] == [16, 16] and doc["machine"][1]["mosaic"]["arity"] == 16
    paths.assign(doc, "machine[b].mosaic.arity", 32)
    paths.assign(doc, "machine[0].mosaic[1].arity", 64)
    assert doc["machine"][0]["mosaic"] == [{"arity": 16}, {"arity": 64}] and doc["machine"][1]["mosaic"]["arity"] == 32
    paths.assign(doc, "machine[-1].entries", 8)
    assert doc["machine"][1]["entries"] == 8 and "entries" not in doc["machine"][0]
    for bad, message in [("machine[c].ways", "no table is named"), ("machine[5].ways", "out of range"),
                         ("workload.scale", "no such field"), ("seed.x", "not a table"), ("machine[0]", "ends in a field"),
                         ("machine..ways", "not a key")]:
        with pytest.raises(ValueError, match=message):
            paths.assign(doc, bad, 1)


def test_a_task_whose_merged_run_fails_runs_each_cell_alone():
    from xlat.sweep import run_task

    experiment = {k: v for k, v in BASE.items() if k != "machine"}
    good, bad = BASE["machine"], [{"name": "vanilla", "preset": "single-tlb", "entries": 0}]
    outcomes = run_task(".", experiment, [("good", good), ("bad", bad)])
    assert [o["cell"] for o in outcomes] == ["good", "bad"]
    pd.testing.assert_frame_equal(outcomes[0]["rows"], xlat.run({**experiment, "machine": good}).frame())
    assert outcomes[1]["rows"] is None and outcomes[1]["error"].startswith("ValueError: machine[0].entries")


def test_a_sweep_connects_to_a_scheduler_by_address(dask_client):
    grid = {"machine.ways": [2, 4]}
    by_address = xlat.sweep(BASE, grid, client=dask_client.scheduler.address)
    pd.testing.assert_frame_equal(by_address, xlat.sweep(BASE, grid, client=dask_client))


def test_cores_are_split_among_workers_in_consecutive_groups():
    from xlat.pinning import core_groups

    assert core_groups([0, 1], 2) == [[0], [1]]
    assert core_groups([0, 1, 2, 4, 5], 2) == [[0, 1, 2], [4, 5]]
    assert core_groups(range(8), 3) == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert core_groups([0, 1], 3) == [], "more workers than cores: none pinned"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_the_workers_of_a_sweeps_own_cluster_run_on_cores_of_their_own():
    from xlat.sweep import _client

    with _client(None, 2) as client:
        cores = client.run(lambda: sorted(os.sched_getaffinity(0)))
    assert len(cores) == 2
    first, second = cores.values()
    assert first and second and not set(first) & set(second)
    assert set(first) | set(second) <= os.sched_getaffinity(0)
