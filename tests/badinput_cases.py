"""Cases of the bad-input sweep, kept apart from the test so the table stays readable.

Each case is ``(family, id, argv)``; ``{d}`` in an argument is the sweep's input folder, where
the fixture writes valid inputs (a queue, a graph, a campaign, a runs folder, labels, a
dataset, a checkpoint, a t_jng table, an instance, a plan, a loss log) and malformed ones.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from gpuscope.cli import main
from gpuscope.core.data import REPO_DATASETS

Case = tuple[str, str, list[str]]

BAD_CSV = 'a,b\n1,"unterminated\n2,3,4,5\n\x00\x01'
BAD_JSON = '{"nodes": [1, 2,'
BAD_TOML = "[campaign\nname = = 3\n"
BAD_BIN = b"PAR1\x00\x01garbage\xff\xfe" * 8

CAMPAIGN = ('[campaign]\nname = "t"\ntimeout_s = 60\noptimizers = ["sgd"]\nbatch_sizes = [8]\n'
            'epochs = [1]\n[[matrix]]\nmodels = ["lenet"]\ndatasets = ["cifar10"]\n'
            'steps_per_epoch = 5\n')
QUEUE = "model,dataset,optimizer,batch_size,epochs\nlenet,cifar10,sgd,8,1\nresnet20,cifar10,adam,32,2\n"

#: One valid invocation per subcommand (outputs under {d}/out), the base of generated cases.
BASE: dict[str, list[str]] = {
    "jobs schema": ["jobs", "schema", "-o", "{d}/out/s.json"],
    "jobs template": ["jobs", "template", "-o", "{d}/out/t.csv"],
    "jobs check": ["jobs", "check", "{d}/q.csv"],
    "graph export": ["graph", "export", "--model", "lenet", "--dataset", "cifar10",
                     "--batch-size", "8", "-o", "{d}/out/g.json"],
    "graph show": ["graph", "show", "{d}/g.json"],
    "graph summary": ["graph", "summary", "--models", "lenet", "-o", "{d}/out/gs.csv"],
    "workloads list": ["workloads", "list"],
    "workloads pipeline": ["workloads", "pipeline", "--dataset", "mnist", "--samples", "2"],
    "profile run": ["profile", "run", "{d}/c.toml", "--device-name", "sweep-gpu",
                    "--out", "{d}/out/runs", "--quiet"],
    "profile label": ["profile", "label", "{d}/runs/v100", "-o", "{d}/out/l.csv"],
    "profile plot": ["profile", "plot", "{d}/trace.parquet", "-o", "{d}/out/p.png"],
    "profile build-dataset": ["profile", "build-dataset", "--runs", "{d}/runs/v100",
                              "-o", "{d}/out/ds", "--quiet"],
    "profile kernels": ["profile", "kernels", "--device-name", "sweep-gpu", "--device", "cpu",
                        "--rows", "2", "-o", "{d}/out/k.parquet", "--quiet"],
    "emulate": ["emulate", "{d}/c.toml", "--devices", "v100", "--out", "{d}/out/em", "--quiet"],
    "emulator fit": ["emulator", "fit", "--kernels", "{d}/k.parquet", "--device", "t4",
                     "-o", "{d}/out/fit"],
    "estimate": ["estimate", "--model", "lenet", "--dataset", "cifar10", "--batch-size", "8",
                 "--devices", "v100", "--quiet"],
    "train": ["train", "--dataset", "{d}/ds", "-o", "{d}/out/m.pt", "--quiet"],
    "evaluate": ["evaluate", "--dataset", "{d}/ds", "--model", "{d}/ck.pt"],
    "predictor corpus": ["predictor", "corpus", "-o", "{d}/out/corpus", "--devices", "v100",
                         "--no-hf", "--quiet"],
    "predictor ablation": ["predictor", "ablation", "--dataset", "{d}/ds"],
    "predict": ["predict", "--model", "{d}/ck.pt", "--jobs", "{d}/q.csv", "-o", "{d}/out/p.csv"],
    "allocate": ["allocate", "--jobs", "{d}/q.csv", "--cluster", "v100:1,a100:1",
                 "-o", "{d}/out/al"],
    "tjng": ["tjng", "--jobs", "{d}/q.csv", "--cluster", "v100:1", "-o", "{d}/out/tj"],
    "schedule": ["schedule", "--instance", "{d}/inst", "--method", "fifo", "-o", "{d}/out/sch"],
    "schedule generate": ["schedule", "generate", "--nodes", "2", "-o", "{d}/out/gen"],
    "mdrl train": ["mdrl", "train", "--episodes", "2", "--quiet", "-o", "{d}/out/mt"],
    "mdrl eval": ["mdrl", "eval", "--episodes", "2", "--no-oracle", "--quiet",
                  "--policies", "first-fit"],
    "mdrl fig3": ["mdrl", "fig3"],
    "mdrl export": ["mdrl", "export", "-o", "{d}/out/mx"],
    "specon simulate": ["specon", "simulate", "-o", "{d}/out/sp"],
    "specon export-k8s": ["specon", "export-k8s", "-o", "{d}/out/k8s"],
    "specon fit": ["specon", "fit", "{d}/loss.csv"],
    "slurm up": ["slurm", "up", "--state-dir", "{d}/out/slurm", "--cluster", "{d}/cluster.toml"],
    "slurm down": ["slurm", "down", "--state-dir", "{d}/out/slurm"],
    "slurm status": ["slurm", "status", "--state-dir", "{d}/out/slurm"],
    "slurm submit": ["slurm", "submit", "{d}/plan.csv", "--state-dir", "{d}/out/slurm",
                     "-o", "{d}/out/sub"],
    "slurm collect": ["slurm", "collect", "-o", "{d}/out/sub", "--no-wait"],
    "demo": ["demo"],
}

# Output options of each command writing files: (option, kind of output).
OUTPUTS: dict[str, tuple[str, str]] = {
    "jobs schema": ("-o", "file"), "jobs template": ("-o", "file"),
    "graph export": ("-o", "file"), "graph summary": ("-o", "file"),
    "profile run": ("--out", "dir"), "profile label": ("-o", "file"),
    "profile plot": ("-o", "file"), "profile build-dataset": ("-o", "dir"),
    "emulate": ("--out", "dir"), "train": ("-o", "file"),
    "predictor corpus": ("-o", "dir"), "predict": ("-o", "file"),
    "allocate": ("-o", "dir"), "tjng": ("-o", "dir"), "schedule": ("-o", "dir"),
    "schedule generate": ("-o", "dir"), "mdrl train": ("-o", "dir"), "mdrl export": ("-o", "dir"),
    "specon simulate": ("-o", "dir"), "specon export-k8s": ("-o", "dir"),
    "estimate": ("-o", "file"), "evaluate": ("-o", "file"), "predictor ablation": ("-o", "file"),
    "profile kernels": ("-o", "file"), "emulator fit": ("-o", "dir"),
}


def _with(cmd: str, opt: str, value: str) -> list[str]:
    """The base argv of ``cmd`` with ``opt`` set to ``value`` (replaced or appended)."""
    argv = list(BASE[cmd])
    if opt in argv:
        argv[argv.index(opt) + 1] = value
    else:
        argv += [opt, value]
    return argv


def _pos(cmd: str, value: str) -> list[str]:
    """The base argv of ``cmd`` with its (first) positional input replaced by ``value``."""
    argv = list(BASE[cmd])
    i = next(i for i, a in enumerate(argv) if a.startswith("{d}/"))
    argv[i] = value
    return argv


def output_cases() -> list[Case]:
    """Outputs that cannot be written: under a file, under /proc, a directory where a file
    goes (or a file where a folder goes)."""
    out: list[Case] = []
    for cmd, (opt, kind) in OUTPUTS.items():
        key = cmd.replace(" ", "-")
        out.append(("output-under-file", f"{key}-under-file", _with(cmd, opt, "{d}/afile/x" +
                                                                     _ext(cmd))))
        out.append(("output-unwritable", f"{key}-proc", _with(cmd, opt, "/proc/gpuscope/x" +
                                                              _ext(cmd))))
        if kind == "file":
            out.append(("output-is-dir", f"{key}-is-dir", _with(cmd, opt, "{d}/dir" + _ext(cmd))))
        else:
            out.append(("output-is-file", f"{key}-is-file", _with(cmd, opt, "{d}/afile")))
    return out


def _ext(cmd: str) -> str:
    return {"jobs schema": ".json", "jobs template": ".csv", "graph export": ".json",
            "graph summary": ".csv", "profile label": ".csv", "profile plot": ".png",
            "train": ".pt", "predict": ".csv", "estimate": ".csv", "evaluate": ".csv",
            "predictor ablation": ".csv", "profile kernels": ".parquet"}.get(cmd, "")


def number_cases(parser: argparse.ArgumentParser) -> list[Case]:
    """Every numeric option of every subcommand: negative, NaN, infinite, huge."""
    out: list[Case] = []
    for cmd in BASE:
        sp = parser
        for word in cmd.split():
            sub = next(a for a in sp._actions if isinstance(a, argparse._SubParsersAction))
            sp = sub.choices[word]
        for a in sp._actions:
            if not a.option_strings or a.type is None or a.choices is not None:
                continue
            name = getattr(a.type, "__name__", "")
            if name not in ("nonneg_int", "pos_int", "seed_int", "nonneg_float", "pos_float",
                            "finite_float", "fraction"):
                continue
            opt = a.option_strings[-1]
            key = f"{cmd.replace(' ', '-')}{opt}"
            values = ("-1", "1e12") if "int" in name else ("-1", "nan", "inf")
            for v in values:
                out.append(("number-parse", f"{key}={v}", _with(cmd, opt, v)))
    return out


def build_inputs(d: Path) -> None:
    """Valid and malformed inputs under ``d`` (graph, runs and instance by gpuscope itself)."""
    (d / "cwd").mkdir()
    (d / "q.csv").write_text(QUEUE)
    (d / "c.toml").write_text(CAMPAIGN)
    (d / "afile").write_text("a regular file\n")
    (d / "adir").mkdir()
    for ext in ("", ".csv", ".json", ".toml", ".parquet", ".pt", ".pbtxt", ".pb", ".json.gz",
                ".png"):
        (d / f"dir{ext}").mkdir()
        (d / f"empty{ext}").write_bytes(b"")
        (d / f"bad{ext}").write_bytes(
            BAD_BIN if ext in (".parquet", ".pt", ".pb", ".json.gz")
            else {".json": BAD_JSON, ".toml": BAD_TOML}.get(ext, BAD_CSV).encode())
    (d / "bin.json").write_bytes(b"\xff\xfe\x00garbage")
    (d / "bin.csv").write_bytes(b"\xff\xfe\x00garbage\n\x80\x81")
    (d / "bin.toml").write_bytes(b"\xff\xfe\x00 = garbage\n\x80\x81")
    (d / "q_renamed.csv").write_text(QUEUE.replace("batch_size", "batchsize"))
    import pandas as pd  # a kernel table of a T4 (emulator fit)

    pd.DataFrame({"op": "add", "B": 1, "H": [4**i for i in range(10)], "device": "t4",
                  "latency_ms": 0.02}).to_parquet(d / "k.parquet")
    (d / "q_dup.csv").write_text("job_id," + QUEUE.splitlines()[0] + "\nA,lenet,cifar10,sgd,8,1\n"
                                 "A,lenet,cifar10,sgd,8,2\n")
    (d / "q_negbatch.csv").write_text(QUEUE.replace(",8,1", ",-8,1"))
    (d / "q_nanarrival.csv").write_text("model,dataset,optimizer,batch_size,epochs,arrival_s\n"
                                        "lenet,cifar10,sgd,8,1,nan\n")
    (d / "q_obj.json").write_text('{"model": 3}\n')
    (d / "c_nan.toml").write_text(CAMPAIGN.replace("timeout_s = 60", "timeout_s = nan"))
    (d / "c_inf.toml").write_text(CAMPAIGN.replace("timeout_s = 60", "timeout_s = inf"))
    (d / "c_nomatrix.toml").write_text(CAMPAIGN.split("[[matrix]]")[0])
    (d / "c_badmodel.toml").write_text(CAMPAIGN.replace('"lenet"', '"nosuchnet"'))
    (d / "loss.csv").write_text("step,loss\n" + "".join(f"{i},{3 / (i + 1):.4f}\n"
                                                        for i in range(40)))
    shutil.copy(REPO_DATASETS.parent / "examples" / "cluster-2types.toml", d / "cluster.toml")
    (d / "cluster_bad.toml").write_text((d / "cluster.toml").read_text()
                                        .replace("gpus = 8", "gpus = -8"))
    shutil.copy(REPO_DATASETS / "checkpoints" / "v100.pt", d / "ck.pt")
    src = REPO_DATASETS / "emulated" / "v100"
    for name in ("ds", "ds_badvocab", "ds_renamed", "ds_allerror", "ds_badlabels"):
        shutil.copytree(src, d / name)
    (d / "ds_badvocab" / "vocab.json").write_text('{"format": "gpuscope.opvocab/1", "counts": 3')
    (d / "ds_badlabels" / "labels.parquet").write_bytes(BAD_BIN)
    import pandas as pd

    lab = pd.read_parquet(src / "labels.parquet")
    lab.rename(columns={c: c.replace("_peak", "_pk") for c in lab.columns}).to_parquet(
        d / "ds_renamed" / "labels.parquet")
    lab.assign(status="error").to_parquet(d / "ds_allerror" / "labels.parquet")
    quiet = ["--quiet"]
    assert main(["graph", "export", "--model", "lenet", "--dataset", "cifar10", "--batch-size",
                 "8", "-o", str(d / "g.json")]) == 0
    assert main(["emulate", str(d / "c.toml"), "--devices", "v100", "--out", str(d / "runs"),
                 *quiet]) == 0
    trace = next((d / "runs" / "v100" / "traces").glob("*.parquet"))
    shutil.copy(trace, d / "trace.parquet")
    shutil.copytree(d / "runs", d / "runs_badtrace")
    next((d / "runs_badtrace" / "v100" / "traces").glob("*.parquet")).write_bytes(BAD_BIN)
    assert main(["tjng", "--jobs", str(d / "q.csv"), "--cluster", "v100:1", "-o",
                 str(d / "tj")]) == 0
    shutil.copytree(d / "tj" / "instance", d / "inst")
    shutil.copytree(d / "inst", d / "inst_bad")
    (d / "inst_bad" / "SelectJobs_times.csv").write_text(BAD_CSV)
    (d / "plan.csv").write_text("job_id,device,gpu\nj000,v100,0\nj001,v100,0\n")
    assert main(["specon", "simulate", "-o", str(d / "sp")]) == 0
