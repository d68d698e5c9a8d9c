"""Running experiments and feeding references: thin wrappers of the native module."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Union

import numpy as np
import pandas as pd

from . import _xlat

#: One memory reference, as ``xlat.trace.read`` returns them and ``Simulation.feed`` takes
#: them: virtual address, address space, bytes touched, and kind (0 load, 1 store,
#: 2 instruction fetch). 16 bytes, the layout the native module packs.
REF_DTYPE = np.dtype(
    {
        "names": ["vaddr", "asid", "size", "kind"],
        "formats": ["<u8", "<u2", "<u2", "u1"],
        "offsets": [0, 8, 10, 12],
        "itemsize": _xlat.RECORD_BYTES,
    }
)

#: References handed to the native module per call when feeding: bounded memory for the
#: packed copy, and a Ctrl-C between two calls is seen at once.
FEED_CHUNK = 1 << 20

Experiment = Union[str, os.PathLike, Mapping[str, Any]]


def _is_toml_text(text: str) -> bool:
    """True when ``text`` is TOML rather than a path: it names no existing file, and has a
    newline, an ``=`` or a leading ``[`` (which paths seldom have)."""
    return not os.path.exists(text) and ("\n" in text or "=" in text or text.lstrip().startswith("["))


def _load(experiment: Experiment, base_dir: os.PathLike | str | None = None) -> "_xlat.Experiment":
    """Parses and validates ``experiment`` as the CLI does; relative trace paths of TOML text or
    a dict resolve against ``base_dir`` (the working directory by default)."""
    if isinstance(experiment, Mapping):
        text = _xlat.toml_from_json(json.dumps(experiment))
        try:
            return _xlat.load(text=text, base_dir=str(base_dir or "."))
        except ValueError as e:
            raise ValueError(_dict_error(text, str(e))) from None
    if isinstance(experiment, os.PathLike) or (isinstance(experiment, str) and not _is_toml_text(experiment)):
        return _xlat.load(path=os.fspath(experiment))
    if isinstance(experiment, str):
        return _xlat.load(text=experiment, base_dir=str(base_dir or "."))
    raise TypeError(f"an experiment is a path, TOML text or a dict, not {type(experiment).__name__}")


_SYNTAX = re.compile(r"toml: TOML parse error at line (\d+), column \d+\n(?:.*\n)*?\s*\|\s*\^+\n(?P<message>(?:.|\n)*)")


def _dict_error(text: str, message: str) -> str:
    """``message``, an error in ``text`` (the TOML a dict was written as), with the dict's field
    path instead of a line of TOML the user never wrote: ``machine[0].presett: unknown field``."""
    m = _SYNTAX.match(message)
    if not m:
        return message
    return f"{_path_at(text.splitlines(), int(m.group(1)))}: {m.group('message').strip()}"


def _path_at(lines: list[str], lineno: int) -> str:
    """The field path of line ``lineno`` (1-based) of TOML ``lines`` as the toml crate writes a
    dict: ``[[array.of.tables]]`` and ``[table]`` headers, then ``key = value`` lines."""
    indices: dict[str, int] = {}
    header: list[str] = []
    for line in lines[: lineno - 1]:
        s = line.strip()
        if s.startswith("[["):
            name = s[2:-2].strip()
            indices[name] = indices.get(name, -1) + 1
            indices = {k: v for k, v in indices.items() if not k.startswith(name + ".")}
            header = name.split(".")
        elif s.startswith("["):
            header = s[1:-1].strip().split(".")
    segments = []
    for i, part in enumerate(header):
        dotted = ".".join(header[: i + 1])
        segments.append(f"{part}[{indices[dotted]}]" if dotted in indices else part)
    line = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
    if "=" in line and not line.lstrip().startswith("["):
        segments.append(line.split("=", 1)[0].strip().strip('"'))
    return ".".join(segments) or "experiment"


def experiment_dict(experiment: Experiment) -> dict:
    """``experiment`` (a path, TOML text or a dict) as a dict of the experiment schema, as
    written (not validated)."""
    if isinstance(experiment, Mapping):
        return json.loads(json.dumps(experiment))
    if isinstance(experiment, os.PathLike) or (isinstance(experiment, str) and not _is_toml_text(experiment)):
        experiment = Path(experiment).read_text()
    return json.loads(_xlat.json_from_toml(experiment))


def _frame(csv: bytes) -> pd.DataFrame:
    """The rows of ``results.csv`` content as pandas reads the file."""
    return pd.read_csv(io.BytesIO(csv))


class Results:
    """The results of :func:`run`."""

    def __init__(self, native: "_xlat.Results"):
        self._native = native

    @property
    def csv(self) -> str:
        """``results.csv``'s content, as the CLI writes it."""
        return self._native.csv().decode()

    def frame(self) -> pd.DataFrame:
        """``results.csv``'s rows as a DataFrame (one row per workload, machine, TLB level and
        side; columns as in docs/configuration.md)."""
        return _frame(self._native.csv())

    @property
    def json(self) -> dict:
        """``results.json``'s content: version, seed, the experiment as it ran, every statistic."""
        return json.loads(self._native.json_text())

    @property
    def partial(self) -> bool:
        """True when the run was interrupted."""
        return self._native.partial

    def write(self, directory: os.PathLike | str) -> None:
        """Writes ``results.csv``, ``results.json`` (and ``timing.csv``, ``eviction_age.csv``
        where the CLI would) into ``directory``, each atomically. Plots are the CLI's
        (``xlat plot``)."""
        self._native.write(os.fspath(directory))


class _Bars:
    """tqdm progress bars, one per workload, fed by the native run's progress reports."""

    def __init__(self):
        from tqdm.auto import tqdm

        self._tqdm = tqdm
        self._bar = None
        self._workload = None

    def __call__(self, workload: str, refs: int, expected: int | None) -> None:
        if workload != self._workload:
            self.close()
            self._workload = workload
            self._bar = self._tqdm(total=expected, desc=workload, unit=" refs", unit_scale=True)
        self._bar.total = expected
        self._bar.update(refs - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def run(experiment: Experiment, *, progress: bool = False, base_dir: os.PathLike | str | None = None) -> Results:
    """Runs ``experiment``: a path to an experiment file, TOML text, or a dict of the same
    schema (``{"workload": [...], "machine": [...]}``). Invalid input raises ``ValueError``
    with the field path as the CLI prints it (``machine[0].tlb: ...``); an unreadable file
    ``OSError``. The simulation runs with the GIL released; Ctrl-C stops it after the current
    batch and raises ``KeyboardInterrupt``. ``progress=True`` shows tqdm bars."""
    loaded = _load(experiment, base_dir)
    bars = _Bars() if progress else None
    try:
        return Results(loaded.run(bars))
    finally:
        if bars is not None:
            bars.close()


def presets() -> list[str]:
    """The names of the built-in machines."""
    return list(_xlat.presets())


def preset(name: str) -> dict:
    """The built-in machine ``name`` as a ``[[machine]]`` dict with every level spelled out,
    to edit and pass in an experiment's ``machine`` list."""
    return json.loads(_xlat.preset_json(name))


def as_records(refs: np.ndarray) -> np.ndarray:
    """``refs`` as a contiguous array of :data:`REF_DTYPE`: a structured array with (at least)
    the fields ``vaddr``, ``asid``, ``size``, ``kind``; ``asid`` and ``size`` may be missing
    (0 and 8 bytes then)."""
    if refs.dtype == REF_DTYPE:
        return np.ascontiguousarray(refs)
    names = refs.dtype.names or ()
    if "vaddr" not in names or "kind" not in names:
        raise ValueError("references need the fields vaddr and kind (see xlat.REF_DTYPE)")
    out = np.zeros(len(refs), dtype=REF_DTYPE)
    out["size"] = 8
    for field in REF_DTYPE.names:
        if field in names:
            out[field] = refs[field]
    return out


class Simulation:
    """Machines fed references directly, for a stream that is not a trace file (your own
    tracer's). ``machines`` is a list of ``[[machine]]`` dicts (or one dict), validated as an
    experiment's; ``seed`` is the experiment seed they default to."""

    def __init__(self, machines: Mapping | Iterable[Mapping], *, workload: str = "python", seed: int | None = None):
        tables = [machines] if isinstance(machines, Mapping) else list(machines)
        doc: dict = {"machine": tables}
        if seed is not None:
            doc["seed"] = seed
        text = _xlat.toml_from_json(json.dumps(doc))
        try:
            self._native = _xlat.Simulation(text, workload)
        except ValueError as e:
            raise ValueError(_dict_error(text, str(e))) from None

    def feed(self, refs: np.ndarray, *, instructions: int = 0) -> "Simulation":
        """Feeds ``refs`` (see :func:`as_records`) to every machine in order, spanning
        ``instructions`` instructions (0 when unknown: MPKI is then empty). Returns self."""
        records = as_records(refs)
        for start in range(0, max(len(records), 1), FEED_CHUNK):
            chunk = records[start : start + FEED_CHUNK]
            self._native.feed(chunk.tobytes(), instructions if start == 0 else 0)
        return self

    def map(self, start: int, length: int, *, asid: int = 0) -> "Simulation":
        """Maps ``length`` bytes from ``start`` in address space ``asid`` (an ``mmap``), after
        the references fed so far: whatever the range held is unmapped first, and once an
        event names an address space, its mappings decide where transparent huge pages go.
        Returns self. See docs/configuration.md, "Address-space events"."""
        self._native.event(False, start, length, asid)
        return self

    def unmap(self, start: int, length: int, *, asid: int = 0) -> "Simulation":
        """Unmaps ``length`` bytes from ``start`` in address space ``asid`` (a ``munmap``),
        after the references fed so far: its pages' frames are freed and their translations
        shot down from every TLB. Returns self."""
        self._native.event(True, start, length, asid)
        return self

    @property
    def refs(self) -> int:
        """References fed so far."""
        return self._native.refs

    @property
    def csv(self) -> str:
        """``results.csv``'s content for what was fed so far."""
        return self._native.csv().decode()

    def frame(self) -> pd.DataFrame:
        """``results.csv``'s rows for what was fed so far."""
        return _frame(self._native.csv())

    @property
    def json(self) -> list:
        """Every machine's statistics, as ``results.json`` lists them under ``results``."""
        return json.loads(self._native.json_text())
