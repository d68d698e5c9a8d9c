"""Parameter sweeps on Dask: a grid of field paths over a base experiment.

Every combination of the grid's values is a *cell*: the base experiment with those fields set
(see :mod:`xlat.paths` for how a path addresses one of several ``[[machine]]`` or
``[[workload]]`` tables). A task is one workload: the cells that run that same workload (all of
them, when the grid varies only machines) give it their machines, renamed ``#k/name`` to keep
them apart, so the task reads the workload once and feeds every machine in one pass. Tasks run
on dask.distributed; a cell is complete when the tasks of all its workloads are, and is then
saved under ``out``, so a sweep run again with the same ``out`` skips the cells it finished
(resume after a crash).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import itertools
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from . import paths
from ._api import Experiment, _is_toml_text, _load, experiment_dict, run

#: Columns every sweep frame has besides the parameters and ``results.csv``'s columns.
CELL, ERROR = "cell", "error"


@dataclass
class Cell:
    """One combination of a grid's values."""

    #: A digest of the resolved experiment: the same cell has the same id in every run.
    id: str
    #: Field path → value.
    params: dict
    #: The base experiment with the parameters set (plots dropped).
    config: dict


def _base_dir(experiment: Experiment, base_dir: os.PathLike | str | None) -> str:
    """Where relative trace paths resolve: beside an experiment file, else ``base_dir`` or the
    working directory; absolute, as workers may run elsewhere."""
    is_path = isinstance(experiment, os.PathLike) or (isinstance(experiment, str) and not _is_toml_text(experiment))
    if is_path and base_dir is None:
        return str(Path(experiment).resolve().parent)
    return str(Path(base_dir or ".").resolve())


def cells(base_experiment: Experiment, grid: Mapping[str, Sequence], *, base_dir: os.PathLike | str | None = None) -> list[Cell]:
    """The cells of ``grid`` over ``base_experiment``, in the grid's order (the last path
    varying fastest)."""
    base = experiment_dict(base_experiment)
    base.pop("plot", None)
    root = _base_dir(base_experiment, base_dir)
    for path, values in grid.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise ValueError(f"grid `{path}`: give a list of values, not {values!r}")
    out = []
    for values in itertools.product(*(list(v) for v in grid.values())):
        params = dict(zip(grid, values))
        config = copy.deepcopy(base)
        for key, value in params.items():
            for path in paths.linked(key):
                paths.assign(config, path, value)
        digest = hashlib.sha256(json.dumps([config, root], sort_keys=True).encode()).hexdigest()[:16]
        out.append(Cell(digest, params, config))
    return out


@dataclass
class _Task:
    """One workload and the machines of the cells that run it."""

    #: The experiment's workload (one) and settings, without machines.
    experiment: dict
    #: (cell id, the index of this workload among the cell's, the cell's machines).
    cells: list


def _tasks(todo: list[Cell]) -> list[_Task]:
    """The tasks of ``todo``: one per distinct workload (with the experiment's settings)."""
    tasks: dict[str, _Task] = {}
    for cell in todo:
        rest = {k: v for k, v in cell.config.items() if k not in ("machine", "workload")}
        for index, workload in enumerate(cell.config.get("workload", [])):
            key = json.dumps([rest, workload], sort_keys=True)
            task = tasks.setdefault(key, _Task({**rest, "workload": [workload]}, []))
            task.cells.append((cell.id, index, cell.config.get("machine", [])))
    return list(tasks.values())


def _prefix(k: int) -> str:
    return f"#{k}/"


def _merged(experiment: dict, machine_lists: list[list]) -> dict:
    """``experiment`` running the machines of every list of ``machine_lists``, the ``k``-th's
    renamed with :func:`_prefix` (in a workload's ``machines`` patterns too)."""
    doc = copy.deepcopy(experiment)
    doc["machine"] = [{**m, "name": _prefix(k) + str(m.get("name", ""))} for k, machines in enumerate(machine_lists) for m in machines]
    for w in doc.get("workload", []):
        if "machines" in w:
            w["machines"] = [_prefix(k) + p for k in range(len(machine_lists)) for p in w["machines"]]
    return doc


def _split(frame: pd.DataFrame, k: int) -> pd.DataFrame:
    """The rows of the ``k``-th machine list in a merged run's ``frame``, named as run alone."""
    prefix = _prefix(k)
    rows = frame[frame["config"].str.startswith(prefix)].copy()
    rows["config"] = rows["config"].str[len(prefix) :]
    return rows.reset_index(drop=True)


def _outcome(cell_id: str, rows: pd.DataFrame | None = None, error: str | None = None) -> dict:
    return {CELL: cell_id, "rows": rows, ERROR: error}


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def run_task(base_dir: str, experiment: dict, cells: list[tuple[str, list]]) -> list[dict]:
    """The Dask task: runs ``experiment`` (one workload) on the machines of every cell of
    ``cells`` (ids and machine lists) in one pass, or, when that fails (one cell's invalid
    machine, memory that does not fit them all), on each cell's alone, so that every cell gets
    its own rows or error."""
    if len(cells) > 1:
        try:
            frame = run(_merged(experiment, [machines for _, machines in cells]), base_dir=base_dir).frame()
            return [_outcome(cell_id, rows=_split(frame, k)) for k, (cell_id, _) in enumerate(cells)]
        except Exception:  # noqa: BLE001 - run alone below, where each error is the cell's
            pass
    outcomes = []
    for cell_id, machines in cells:
        try:
            outcomes.append(_outcome(cell_id, rows=run({**experiment, "machine": machines}, base_dir=base_dir).frame()))
        except Exception as e:  # noqa: BLE001 - a cell's error is reported with the cell
            outcomes.append(_outcome(cell_id, error=_error(e)))
    return outcomes


def _whole(pieces: list[pd.DataFrame]) -> pd.DataFrame:
    """A cell's rows from its workloads' ``pieces`` in order, as its own run writes them:
    results.csv has a ``unit`` column only when some row has a unit."""
    rows = pd.concat(pieces, ignore_index=True)
    if "unit" in rows and rows["unit"].isna().all():
        rows = rows.drop(columns="unit")
    return rows


class _Store:
    """The sweep's directory: ``cells/ID.parquet`` (a finished cell's rows) and ``cells/ID.json``
    (its parameters and resolved experiment), ``results.parquet`` and ``cells.parquet``. Every
    file is written to a temporary name and renamed into place, so a crash leaves none half
    written, and a cell counts as finished only once its rows are in place."""

    def __init__(self, out: os.PathLike | str | None):
        self.root = Path(out) if out is not None else None
        if self.root is not None:
            (self.root / "cells").mkdir(parents=True, exist_ok=True)

    def _write(self, path: Path, write) -> None:
        tmp = path.with_name(f".{path.name}.partial-{os.getpid()}")
        write(tmp)
        os.replace(tmp, path)

    def finished(self, cell: Cell) -> pd.DataFrame | None:
        if self.root is None:
            return None
        path = self.root / "cells" / f"{cell.id}.parquet"
        return pd.read_parquet(path) if path.exists() else None

    def save(self, cell: Cell, rows: pd.DataFrame) -> None:
        if self.root is None:
            return
        meta = json.dumps({"params": cell.params, "config": cell.config}, indent=1, default=str)
        self._write(self.root / "cells" / f"{cell.id}.json", lambda p: p.write_text(meta))
        self._write(self.root / "cells" / f"{cell.id}.parquet", lambda p: rows.to_parquet(p, index=False))

    def save_frames(self, results: pd.DataFrame, summary: pd.DataFrame) -> None:
        if self.root is None:
            return
        self._write(self.root / "results.parquet", lambda p: results.to_parquet(p, index=False))
        self._write(self.root / "cells.parquet", lambda p: summary.to_parquet(p, index=False))


def _column_value(value: Any) -> Any:
    """A parameter value as a column holds it: lists and tables as JSON text."""
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value


def _assemble(todo: list[Cell], rows: dict, errors: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The sweep's frame (each cell's rows, or one row with its error, after its parameters)
    and the summary of cells (parameters, status, error, resolved experiment as JSON)."""
    parts, summary = [], []
    for cell in todo:
        params = {path: _column_value(v) for path, v in cell.params.items()}
        if cell.id in rows:
            part = rows[cell.id].copy()
            for i, (path, value) in enumerate(params.items()):
                part.insert(i, path, [value] * len(part))
            part.insert(len(params), CELL, cell.id)
            part[ERROR] = None
        else:
            part = pd.DataFrame([{**params, CELL: cell.id, ERROR: errors.get(cell.id, "not run")}])
        parts.append(part)
        status = "done" if cell.id in rows else "failed"
        summary.append({**params, CELL: cell.id, "status": status, ERROR: errors.get(cell.id), "config": json.dumps(cell.config, sort_keys=True)})
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return frame, pd.DataFrame(summary)


@contextlib.contextmanager
def _client(client, workers: int | None):
    """``client``; a Client of the scheduler at ``client`` when it is an address
    (``tcp://host:8786``); or a Client of a new LocalCluster of ``workers`` processes (one
    thread each: a simulation uses a second core for reading its workload), each confined to
    its share of this process's cores when there are as many. Clients made here are closed
    afterwards."""
    from dask.distributed import Client, LocalCluster

    from .pinning import PinCores, core_groups

    if isinstance(client, str):
        with Client(client) as connected:
            yield connected
        return
    if client is not None:
        yield client
        return

    cores = sorted(os.sched_getaffinity(0))
    n = workers or len(cores)
    with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.ERROR) as cluster:
        with Client(cluster) as new:
            groups = core_groups(cores, n)
            if groups:
                new.register_plugin(PinCores(groups))
            yield new


def sweep(
    base_experiment: Experiment,
    grid: Mapping[str, Sequence],
    client=None,
    out: os.PathLike | str | None = None,
    *,
    base_dir: os.PathLike | str | None = None,
    workers: int | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Runs every cell of ``grid`` (field path → list of values) over ``base_experiment`` on
    Dask: on ``client`` (a ``Client``, or a scheduler's address such as ``tcp://host:8786``;
    its workers need this package installed), or on a new LocalCluster of
    ``workers`` processes (the cores by default). Returns one frame: each cell's parameters as
    columns, then ``cell`` (its id), ``results.csv``'s columns, and ``error``, set on the one
    row of a cell that failed (a failed cell is never dropped). With ``out``, finished cells
    are kept in ``out`` as they finish and skipped when the sweep runs again, and the frame is
    written to ``out/results.parquet``, a row per cell with its resolved experiment to
    ``out/cells.parquet``. A task whose worker died is run again by Dask (up to its
    ``distributed.scheduler.allowed-failures``), then reported as its cells' error."""
    todo = cells(base_experiment, grid, base_dir=base_dir)
    root = _base_dir(base_experiment, base_dir)
    store = _Store(out)
    rows = {c.id: f for c in todo if (f := store.finished(c)) is not None}
    errors = {c.id: e for c in todo if c.id not in rows and (e := _invalid(c, root))}
    pending = [c for c in todo if c.id not in rows and c.id not in errors]
    if pending:
        _run_pending(pending, root, client, workers, store, rows, errors, progress)
    frame, summary = _assemble(todo, rows, errors)
    store.save_frames(frame, summary)
    return frame


def _invalid(cell: Cell, base_dir: str) -> str | None:
    """Why ``cell``'s experiment is invalid as a whole, if it is: found here, before its
    workloads are run apart (two workloads of one name, say, would not be found there)."""
    try:
        _load(cell.config, base_dir)
    except (ValueError, OSError) as e:
        return _error(e)
    return None


def _run_pending(pending, root, client, workers, store, rows, errors, progress) -> None:
    """Runs the ``pending`` cells' tasks on Dask, saving each cell once all its workloads ran."""
    from dask.distributed import as_completed

    by_id = {c.id: c for c in pending}
    pieces: dict[str, dict[int, pd.DataFrame]] = {c.id: {} for c in pending}
    workloads = {c.id: len(c.config.get("workload", [])) for c in pending}
    bar = _bar(progress, len(pending))
    with _client(client, workers) as dask_client:
        futures = {}
        for task in _tasks(pending):
            payload = [(cell_id, machines) for cell_id, _, machines in task.cells]
            futures[dask_client.submit(run_task, root, task.experiment, payload, pure=False)] = task
        for future in as_completed(futures):
            task = futures[future]
            try:
                outcomes = future.result()
            except Exception as e:  # noqa: BLE001 - a lost task (KilledWorker) fails its cells
                outcomes = [_outcome(cell_id, error=_error(e)) for cell_id, _, _ in task.cells]
            for (cell_id, index, _), o in zip(task.cells, outcomes):
                if o[ERROR] is not None:
                    errors.setdefault(cell_id, o[ERROR])
                    continue
                pieces[cell_id][index] = o["rows"]
                if len(pieces[cell_id]) == workloads[cell_id] and cell_id not in errors:
                    rows[cell_id] = _whole([pieces[cell_id][i] for i in range(workloads[cell_id])])
                    store.save(by_id[cell_id], rows[cell_id])
                    if bar is not None:
                        bar.update(1)
    if bar is not None:
        bar.close()


def _bar(progress: bool, total: int):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="cells", unit=" cells")
