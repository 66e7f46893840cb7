"""The README, from an empty folder on a machine without a GPU: its quick start (a GPU named by
the user: devices add -> profile run -> build-dataset -> train -> predict -> allocate) runs
line by line and every step labels the data CPU-only; its Python snippet runs; and no command
of its blocks reads a file that an earlier command did not write (or a repository path)."""

from __future__ import annotations

import contextlib
import fnmatch
import io
import json
import re
import shlex
import sys
from pathlib import Path

import pandas as pd
import pytest

from gpuscope.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def _block(marker: str, lang: str) -> str:
    text = README.read_text()
    at = text.index(f"<!-- {marker} -->")
    m = re.search(rf"```{lang}\n(.*?)```", text[at:], re.S)
    assert m, marker
    return m.group(1)


def _sh_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", README.read_text(), re.S)


def _commands(block: str) -> list[tuple[str, str | None]]:
    """(command line, here-document body or None), continuations joined."""
    out: list[tuple[str, str | None]] = []
    lines = block.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        while line.rstrip().endswith("\\"):
            i += 1
            line = line.rstrip()[:-1] + " " + lines[i].strip()
        here = re.search(r"<<'?(\w+)'?", line)
        body = None
        if here:
            end = lines.index(here.group(1), i + 1)
            body = "\n".join(lines[i + 1:end]) + "\n"
            i = end
        if line.strip():
            out.append((line, body))
        i += 1
    return out


class NoGpu:
    """NVML on a machine without a GPU driver."""

    class NVMLError(Exception):
        pass

    def nvmlInit(self) -> None:
        raise self.NVMLError("NVML Shared Library Not Found")


def test_quick_start_runs_from_an_empty_folder(tmp_path: Path, monkeypatch) -> None:
    work = tmp_path / "empty"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv("GPUSCOPE_USER_DEVICES", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GPUSCOPE_CACHE", str(tmp_path / "cache"))  # a clean graph cache
    monkeypatch.setitem(sys.modules, "pynvml", NoGpu())
    said = io.StringIO()
    for line, body in _commands(_block("quickstart", "sh")):
        argv = shlex.split(line, comments=True)
        if argv[0] == "cat":  # cat > FILE <<'EOF'
            Path(argv[2]).write_text(str(body))
            continue
        assert argv[0] == "gpuscope", line
        with contextlib.redirect_stderr(said):
            rc = main(argv[1:])
        assert rc == 0, f"{line}\n{said.getvalue()[-2000:]}"
    err = said.getvalue()
    assert "CPU-only" in err and "l4 has no checkpoint of its own" in err
    assert (tmp_path / "config" / "gpuscope" / "devices.toml").is_file()
    manifest = json.loads((work / "datasets" / "my-gpu" / "manifest.json").read_text())
    assert manifest["device_kind"] == "cpu-only" and manifest["device"] == "my-gpu"
    import torch

    ck = torch.load(work / "models" / "my-gpu.pt", weights_only=True)
    assert ck["device_kind"] == "cpu-only" and ck["devices"] == ["my-gpu"]
    pred = pd.read_csv(work / "pred.csv")
    assert len(pred) == 3 and set(pred["device"]) == {"my-gpu"}
    assert set(pred["device_kind"]) == {"cpu-only"} and (pred["exec_time_s"] > 0).all()
    plans = list((work / "out").glob("plan_*.csv"))
    assert plans
    plan = pd.read_csv(plans[0])
    assert len(plan) == 3 and set(plan["device"]) <= {"my-gpu", "a100", "l4"}


def test_python_snippet_runs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUSCOPE_CACHE", str(tmp_path / "cache"))
    assert main(["jobs", "template", "-o", "queue.csv"]) == 0
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_block("python-api", "python"), "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert sum(any(d in ln for d in ("v100", "a100", "h100")) for ln in lines) == 3, lines


#: Options whose value is a file or folder a command reads.
INPUT_OPTIONS = ("--runs", "--dataset", "--model", "--init-from", "--jobs", "--module",
                 "--graph", "--model-dir", "--instance", "--from", "--truth", "--graphs")
OUTPUT_OPTIONS = ("-o", "--out", "--output")


def _is_path(v: str) -> bool:
    return "/" in v or bool(re.search(r"\.(csv|json|pt|toml|py|parquet|trace)(:\w+)?$", v))


#: Gavel's published files the README names bare (its traces end in ``.trace``).
GAVEL_FILES = ("simulation_throughputs.json",)


def _covered(path: str, made: list[str]) -> bool:
    from gpuscope.core.data import external_file

    if len(Path(path).parts) == 1 and (external_file(path).is_file()
                                       or path in GAVEL_FILES or path.endswith(".trace")):
        # others' measured data by bare name (allocate --truth simulation_throughputs.json),
        # read from $GPUSCOPE_DATA at run time: a checkout without that folder still passes
        return True
    path = path.split(":")[0].rstrip("/").replace("$d", "*")
    for m in made:
        m = m.rstrip("/").replace("$d", "*")
        if path == m or path.startswith(m + "/") or fnmatch.fnmatch(path, m) \
                or fnmatch.fnmatch(m, path):
            return True
    return False


@pytest.mark.parametrize("block", range(len(_sh_blocks())))
def test_no_command_reads_a_file_no_earlier_command_wrote(block: int) -> None:
    made: list[str] = []
    for line, _ in _commands(_sh_blocks()[block]):
        if "benchmarks/" in line or line.startswith(("make", "pip", "cd ")):
            continue  # source-checkout scripts and the install lines
        assert not re.search(r"\b(examples|campaigns|datasets/checkpoints)/", line), line
        argv = [a.rstrip(";") for a in shlex.split(line.replace("<run_id>", "RUN"), comments=True)]
        for i, a in enumerate(argv):
            if a in INPUT_OPTIONS and i + 1 < len(argv):
                v = argv[i + 1].split("=", 1)[-1]  # --model DEVICE=PATH
                if _is_path(v):
                    assert _covered(v, made), f"{line}: {v} was not written before"
            if a == "show" and argv[i - 1] == "graph":
                assert _covered(argv[i + 1], made), line
            if a == "submit" and argv[i - 1] == "slurm":
                assert _covered(argv[i + 1], made), line
        for i, a in enumerate(argv):
            if a in OUTPUT_OPTIONS and i + 1 < len(argv):
                made.append(argv[i + 1])
            if a == ">" and i + 1 < len(argv):
                made.append(argv[i + 1])
            if a == "template":  # jobs template writes my_model.py next to the queue
                made.append("my_model.py")
            if a == "run" and argv[i - 1] == "profile":  # runs/<device-name>
                made.append(f"runs/{argv[argv.index('--device-name') + 1]}")
            if a == "emulate":
                made.append("runs/emulated")
