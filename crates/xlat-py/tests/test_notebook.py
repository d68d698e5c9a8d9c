"""The example notebook runs end to end."""

import nbformat
from nbclient import NotebookClient

from conftest import REPO


def test_the_quickstart_notebook_runs(tmp_path, monkeypatch):
    notebook = nbformat.read(REPO / "examples" / "python-quickstart.ipynb", as_version=4)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert (tmp_path / "quickstart-sweep" / "results.parquet").exists()
