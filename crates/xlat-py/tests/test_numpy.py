"""NumPy references: trace files as arrays, and arrays fed to machines directly."""

import numpy as np
import pytest

import xlat
from xlat import _api

MACHINES = [
    {"name": "small", "preset": "single-tlb", "entries": 64, "ways": 4},
    {"name": "skylake", "preset": "skylake-like"},
    {"name": "mosaic", "preset": "mosaic-paper", "ways": 4, "os": {"placement": "iceberg"}, "mosaic": [{"arity": [4], "ways": 4}]},
]


def _refs(n, seed=1):
    rng = np.random.default_rng(seed)
    refs = np.zeros(n, dtype=xlat.REF_DTYPE)
    refs["vaddr"] = 0x4000_0000 + rng.integers(0, 1 << 27, n, dtype=np.uint64)
    refs["asid"] = rng.integers(0, 2, n)
    refs["size"] = rng.choice([1, 4, 8, 64], n)
    refs["kind"] = rng.integers(0, 3, n)
    return refs


@pytest.mark.parametrize("extension", [".xlat", ".lackey"])
def test_a_written_trace_reads_back_as_the_same_array(tmp_path, extension):
    refs = _refs(50_000)
    if extension == ".lackey":  # Lackey has no address spaces
        refs["asid"] = 0
    path = tmp_path / f"t{extension}"
    xlat.trace.write(path, refs)
    assert np.array_equal(xlat.trace.read(path), refs)
    assert np.array_equal(xlat.trace.read(path, limit=123), refs[:123])
    info = xlat.trace.info(path)
    assert info["references"] == len(refs)
    assert info["stores"] == int((refs["kind"] == 1).sum())


def test_feeding_an_array_equals_running_its_trace_file(tmp_path):
    refs = _refs(300_000)
    path = tmp_path / "t.xlat"
    xlat.trace.write(path, refs)
    from_file = xlat.run({"workload": [{"name": "t", "type": "trace", "path": str(path)}], "machine": MACHINES})
    read_back = xlat.trace.read(path)
    fed = xlat.Simulation(MACHINES, workload="t").feed(read_back)
    assert fed.refs == len(refs)
    assert fed.csv == from_file.csv
    assert fed.frame().equals(from_file.frame())


def test_feeding_in_chunks_equals_feeding_at_once(monkeypatch):
    refs = _refs(100_000)
    whole = xlat.Simulation(MACHINES).feed(refs)
    monkeypatch.setattr(_api, "FEED_CHUNK", 7_777)
    chunked = xlat.Simulation(MACHINES).feed(refs[:40_000]).feed(refs[40_000:])
    assert chunked.csv == whole.csv


def test_instructions_give_mpki():
    refs = _refs(10_000)
    frame = xlat.Simulation(MACHINES[0]).feed(refs, instructions=20_000).frame()
    assert frame["instructions"].iloc[0] == 20_000
    assert frame["mpki"].iloc[0] == pytest.approx(frame["misses"].iloc[0] / 20)


def test_an_array_of_other_fields_and_widths_is_converted():
    refs = _refs(1_000)
    loose = np.zeros(len(refs), dtype=[("kind", "i8"), ("vaddr", "i8")])
    loose["kind"], loose["vaddr"] = refs["kind"], refs["vaddr"]
    exact = refs.copy()
    exact["asid"], exact["size"] = 0, 8
    assert xlat.Simulation(MACHINES).feed(loose).csv == xlat.Simulation(MACHINES).feed(exact).csv


def test_bad_references_raise_value_error_naming_the_reference():
    refs = _refs(10)
    refs["kind"][3] = 7
    with pytest.raises(ValueError, match="reference 3: kind 7"):
        xlat.Simulation(MACHINES).feed(refs)
    refs = _refs(10)
    refs["vaddr"][5], refs["size"][5] = 2**64 - 2, 8
    with pytest.raises(ValueError, match="reference 5"):
        xlat.Simulation(MACHINES).feed(refs)
    with pytest.raises(ValueError, match="vaddr and kind"):
        xlat.Simulation(MACHINES).feed(np.zeros(3, dtype=[("address", "u8")]))
    with pytest.raises(ValueError, match=r"machine\[0\].entries"):
        xlat.Simulation([{"name": "m", "preset": "single-tlb", "entries": 0}])
    with pytest.raises(ValueError, match=r"^machine\[0\].os.bogus: unknown field"):
        xlat.Simulation([{"name": "m", "preset": "single-tlb", "os": {"bogus": 1}}])
    with pytest.raises(OSError):
        xlat.trace.read("/nonexistent/trace.xlat")


def test_an_unmap_frees_the_pages_and_they_fault_again():
    refs = np.zeros(64, dtype=xlat.REF_DTYPE)
    refs["vaddr"] = 0x4000_0000 + np.arange(64, dtype=np.uint64) * 4096
    refs["size"] = 8
    sim = xlat.Simulation(MACHINES[0]).map(0x4000_0000, 64 * 4096).feed(refs)
    sim.unmap(0x4000_0000, 16 * 4096).feed(refs[:16])
    machine = sim.json[0]["machines"][0]
    space = machine["os"]["address_space"]
    assert (space["maps"], space["unmaps"], space["pages_freed"]) == (1, 1, 16)
    assert space["faults_outside_mappings"] == 16  # touched again after the unmap
    assert machine["os"]["page_faults"] == 64 + 16
    assert machine["os"]["shootdowns"] >= 16


def test_a_malformed_event_raises_value_error():
    with pytest.raises(ValueError, match="empty"):
        xlat.Simulation(MACHINES[0]).map(0x1000, 0)
