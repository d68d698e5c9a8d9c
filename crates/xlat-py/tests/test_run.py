"""xlat.run against the CLI, experiment inputs, errors, presets, Ctrl-C and progress."""

import json
import os
import signal
import subprocess
import threading
import time

import pandas as pd
import pytest

import xlat


def _without_seconds(value):
    """results.json without its wall-clock fields, which differ between two runs."""
    if isinstance(value, dict):
        return {k: _without_seconds(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [_without_seconds(v) for v in value]
    return value


def test_run_gives_exactly_the_cli_results(xlat_cli, small_experiment, tmp_path):
    subprocess.run([xlat_cli, "run", small_experiment, "--out", tmp_path / "cli", "--quiet"], check=True)
    results = xlat.run(small_experiment)
    cli_csv = (tmp_path / "cli" / "results.csv").read_text()
    assert results.csv == cli_csv
    pd.testing.assert_frame_equal(results.frame(), pd.read_csv(tmp_path / "cli" / "results.csv"))
    cli_json = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert _without_seconds(results.json) == _without_seconds(cli_json)
    # .write writes the same files as the CLI (timing.csv too: a machine is timed).
    results.write(tmp_path / "py")
    for name in ["results.csv", "timing.csv"]:
        assert (tmp_path / "py" / name).read_text() == (tmp_path / "cli" / name).read_text(), name
    assert _without_seconds(json.loads((tmp_path / "py" / "results.json").read_text())) == _without_seconds(cli_json)


def test_path_toml_text_and_dict_run_alike(small_experiment):
    by_path = xlat.run(str(small_experiment)).csv
    assert xlat.run(small_experiment.read_text()).csv == by_path
    assert xlat.run(xlat.experiment_dict(small_experiment)).csv == by_path


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda e: e["machine"][1].update(preset="nope"), "machine[1].preset"),
        (lambda e: e["machine"][0].update(presett="skylake-like"), "machine[0].presett"),
        (lambda e: e["machine"][1]["mosaic"][0].update(arity="four"), "machine[1].mosaic[0].arity"),
        (lambda e: e["machine"][2]["os"].update(memory="lots"), "machine[2].os.memory"),
        (lambda e: e["workload"][0].update(refs=-5), "workload[0].refs"),
        (lambda e: e["workload"][1].update(type="nbody"), "workload[1].type"),
        (lambda e: e.update(batch=0), "batch"),
        (lambda e: e.update(machine=[]), "machine"),
    ],
)
def test_a_bad_dict_raises_value_error_naming_the_field(small_experiment, change, field):
    experiment = xlat.experiment_dict(small_experiment)
    change(experiment)
    with pytest.raises(ValueError) as raised:
        xlat.run(experiment)
    assert str(raised.value).startswith(f"{field}:"), str(raised.value)


def test_a_bad_file_names_the_file_and_field_as_the_cli_does(xlat_cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[workload]]\nname = "u"\ntype = "uniform"\nfootprint = "1MiB"\nrefs = 10\n[[machine]]\nname = "m"\npreset = "nope"\n')
    cli = subprocess.run([xlat_cli, "run", bad, "--quiet"], capture_output=True, text=True)
    with pytest.raises(ValueError) as raised:
        xlat.run(bad)
    assert str(raised.value) in cli.stderr
    assert str(raised.value).startswith(f"{bad}: machine[0].preset:")
    with pytest.raises(OSError):
        xlat.run(tmp_path / "missing.toml")
    with pytest.raises(TypeError):
        xlat.run(42)


@pytest.mark.parametrize("name", xlat.presets())
def test_a_preset_dict_is_the_preset(name):
    workload = [{"name": "u", "type": "uniform", "footprint": "16MiB", "refs": 20_000}]
    by_name = xlat.run({"workload": workload, "machine": [{"name": name, "preset": name}]})
    spelled_out = xlat.run({"workload": workload, "machine": [xlat.preset(name)]})
    assert spelled_out.csv == by_name.csv
    with pytest.raises(ValueError, match="unknown preset"):
        xlat.preset("nope")


def _long_experiment():
    return {
        "workload": [{"name": "long", "type": "uniform", "footprint": "1GiB", "refs": 10_000_000_000}],
        "machine": [{"name": "m", "preset": "single-tlb", "entries": 64, "ways": 4}],
    }


def test_ctrl_c_raises_keyboard_interrupt_and_stops_the_run():
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        xlat.run(_long_experiment())
    timer.join()
    # Ten billion references would take minutes: the run stopped at the signal.
    assert time.monotonic() - started < 5


def test_progress_draws_a_bar_that_ends_at_the_total(capsys):
    experiment = {
        "workload": [{"name": "bar-workload", "type": "uniform", "footprint": "64MiB", "refs": 3_000_000}],
        "machine": [{"name": "m", "preset": "single-tlb", "entries": 64, "ways": 4}],
    }
    xlat.run(experiment, progress=True)
    err = capsys.readouterr().err
    assert "bar-workload" in err and "100%" in err, err
