"""The Python API (docs/api.md): lazy imports, the docs example runs, trace() of an
in-memory model equals the module-file export of the same model."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gpuscope
from gpuscope.core.errors import InputError

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def test_import_gpuscope_is_lazy() -> None:
    code = ("import sys, gpuscope; names = gpuscope.__all__; "
            "print(int('torch' in sys.modules), int('pandas' in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["0", "0"]
    for name in gpuscope.__all__:
        assert getattr(gpuscope, name) is not None
    with pytest.raises(AttributeError):
        gpuscope.nothing_here  # noqa: B018


@pytest.mark.slow
def test_docs_example_runs(tmp_path, monkeypatch, capsys) -> None:
    code = re.search(r"```python\n(.*?)\n```", DOC.read_text(), re.S)
    assert code is not None
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUSCOPE_CACHE", str(tmp_path / "cache"))
    scope: dict = {"__name__": "__main__"}
    exec(compile(code.group(1), str(DOC), "exec"), scope)  # noqa: S102 - our own docs
    out = capsys.readouterr().out
    assert "GFLOPs per step" in out and "makespan" in out
    est = scope["est"]
    assert len(est) == 2 * 3 and set(est["device"]) == {"v100", "a100", "h100"}
    assert (est["provenance"] == "emulated").all()
    sched = scope["result"].schedule
    assert len(sched) == 2
    # the default policy uses the cluster: each job starts on arrival, on its own GPU
    assert set(sched["device"]) == {"a100", "h100"}
    assert (sched["start_s"] == sched["arrival_s"]).all()


def test_trace_equals_the_module_file_export(tmp_path) -> None:
    import torch

    src = textwrap.dedent("""
        from torch import nn

        def build():
            return nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 5))
    """)
    (tmp_path / "net.py").write_text(src)
    scope: dict = {}
    exec(src, scope)  # noqa: S102
    with torch.device("meta"):
        model = scope["build"]()
    kw = dict(dataset="tabular:features=12,classes=5", batch_size=4, optimizer="adamw")
    g_mem = gpuscope.trace(model, **kw)
    g_file = gpuscope.export_graph(gpuscope.job(module=f"{tmp_path / 'net.py'}:build", **kw))
    assert [n.op for n in g_mem.nodes] == [n.op for n in g_file.nodes]
    assert g_mem.edges == g_file.edges
    assert g_mem.meta["param_count"] == 12 * 32 + 32 + 32 * 5 + 5
    with pytest.raises(InputError, match="meta device"):
        gpuscope.trace(scope["build"](), precision="amp-fp16", **kw)
    with pytest.raises(InputError):
        gpuscope.job(dataset="cifar10", batch_size=1)
