"""Feedback of long commands (docs/design.md, CLI): a wrong path, factory name or checkpoint
fails before torch is imported (so within a couple of seconds, whatever the command), and a
long command names its phases on stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuscope.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "my_model.py"


def _fails_before_torch(cases: dict[str, list[str]], cwd: Path) -> dict[str, list]:
    """Run every case in one fresh interpreter, in order; per case: exit code, whether torch
    was imported by then, and stderr (one line expected)."""
    code = f"""
import contextlib, io, json, sys
from gpuscope.cli import main
out = {{}}
for name, argv in {cases!r}.items():
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(argv)
    out[name] = [rc, "torch" in sys.modules, err.getvalue()]
print(json.dumps(out))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=cwd)
    return json.loads(proc.stdout)


def test_wrong_paths_and_names_fail_before_torch(tmp_path: Path) -> None:
    (tmp_path / "bad.pt").write_bytes(b"\x00 not a torch archive")
    (tmp_path / "missing.csv").write_text("model,dataset,optimizer,batch_size,epochs,module\n"
                                          "m,imagenet,sgd,2,1,nope.py:build\n")
    (tmp_path / "typo.csv").write_text("model,dataset,optimizer,batch_size,epochs,module\n"
                                       f"m,imagenet,sgd,2,1,{EXAMPLE}:bild\n")
    (tmp_path / "q.csv").write_text("model,dataset,optimizer,batch_size,epochs\n"
                                    "resnet50,imagenet,sgd,32,1\n")
    ckpt = str(ROOT / "datasets" / "checkpoints" / "titanx.pt")
    cases = {
        "predict: missing checkpoint": ["predict", "--model", "nope.pt", "--jobs", "q.csv",
                                        "-o", "p.csv"],
        "predict: corrupt checkpoint": ["predict", "--model", "bad.pt", "--jobs", "q.csv",
                                        "-o", "p.csv"],
        "predict: missing module file": ["predict", "--model", ckpt, "--jobs", "missing.csv",
                                         "-o", "p.csv"],
        "predict: misspelled factory": ["predict", "--model", ckpt, "--jobs", "typo.csv",
                                        "-o", "p.csv"],
        "evaluate: missing checkpoint": ["evaluate", "--dataset",
                                         str(ROOT / "datasets" / "emulated" / "titanx"),
                                         "--model", "nope.pt"],
        "train: missing dataset": ["train", "--dataset", "nope", "-o", "m.pt"],
        "estimate: misspelled factory": ["estimate", "--module", f"{EXAMPLE}:bild",
                                         "--batch-size", "2"],
        "estimate: queue with a missing module": ["estimate", "--jobs", "missing.csv"],
        "graph export: missing module file": ["graph", "export", "--module", "nope.py:build",
                                              "--dataset", "imagenet", "--batch-size", "2",
                                              "-o", "g.json"],
        "jobs check: misspelled factory": ["jobs", "check", "typo.csv"],
        "allocate: queue with a misspelled factory": ["allocate", "--jobs", "typo.csv",
                                                      "--cluster", "titanx:1", "-o", "a"],
        "tjng: queue with a missing module": ["tjng", "--jobs", "missing.csv", "--cluster",
                                              "titanx:1", "-o", "t"],
    }
    out = _fails_before_torch(cases, tmp_path)
    for name, (rc, torch_loaded, err) in out.items():
        assert rc == 2 and not torch_loaded, (name, err)
        assert err.startswith("gpuscope: error: ") and err.count("\n") == 1, (name, err)
    assert "defines no 'bild' (did you mean 'build'?)" in out["jobs check: misspelled factory"][2]
    assert "nope.py does not exist" in out["predict: missing module file"][2]
    assert "not a torch.save archive" in out["predict: corrupt checkpoint"][2]


def test_module_problem_reads_the_file_without_running_it(tmp_path: Path) -> None:
    from gpuscope.jobs.spec import module_problem

    f = tmp_path / "m.py"
    f.write_text("raise SystemExit('ran')\nimport os.path as build_alias\nfrom x import helper\n"
                 "try:\n    from y import build\nexcept ImportError:\n    def build(): ...\n"
                 "Model = make()\nclass Net: ...\n")
    for name in ("build", "build_alias", "helper", "Model", "Net"):
        assert module_problem(f"{f}:{name}") is None, name
    assert module_problem(f"{f}:bild") == f"module file {f} defines no 'bild' (did you mean 'build'?)"
    assert module_problem(f"{f}:zzz") == f"module file {f} defines no 'zzz'"
    assert module_problem("os.path:join") is None  # a package module: never imported here
    f.write_text("def build(:\n")
    assert "is not valid Python" in str(module_problem(f"{f}:build"))
    (tmp_path / "star.py").write_text("from torch.nn import *\n")
    assert module_problem(f"{tmp_path / 'star.py'}:Linear") is None


def test_long_commands_name_their_phases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("GPUSCOPE_QUIET", raising=False)
    out = tmp_path / "g.json"
    assert main(["graph", "export", "--model", "lenet", "--dataset", "cifar10",
                 "--batch-size", "2", "-o", str(out)]) == 0
    cap = capsys.readouterr()
    assert cap.err == "tracing the training step of lenet ...\n" and out.is_file()
    # a failure inside a phase: the phase line, then one error line, no traceback
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\n\ndef build():\n    return torch.nn.Linear(7, 2)\n")
    assert main(["graph", "export", "--module", f"{bad}:build", "--dataset", "tabular:features=3",
                 "--batch-size", "2", "-o", str(tmp_path / "b.json")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "tracing the training step of bad.build ..." and len(lines) == 2
    assert lines[1].startswith("gpuscope: error: bad.build: the training step failed")
    monkeypatch.setenv("GPUSCOPE_QUIET", "1")
    assert main(["graph", "export", "--model", "lenet", "--dataset", "cifar10",
                 "--batch-size", "2", "-o", str(out)]) == 0
    assert capsys.readouterr().err == ""
