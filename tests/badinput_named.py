"""The hand-written cases of the bad-input sweep (``tests/test_bad_input_sweep.py``): one
``(family, id, argv)`` per case, ``{d}`` standing for the sweep's input folder. The generated
ones (every numeric option, every output option) are in ``badinput_cases``."""

from __future__ import annotations

from badinput_cases import BASE, Case, _pos, _with


def file_inputs() -> list[tuple[str, list[str]]]:
    """Every file or folder a command takes: ``{X}`` stands for it (``{X}.csv``: a file of
    that format); the missing-file, dir-as-file, malformed, empty and hostile families are
    made from this list."""
    d = "{d}"
    return [
        ("jobs-check", _pos("jobs check", "{X}.csv")),
        ("jobs-check-json", _pos("jobs check", "{X}.json")),
        ("graph-show", _pos("graph show", "{X}.json")),
        ("graph-export-graph", BASE["graph export"][:2] + ["--graph", "{X}.json", "-o",
                                                           f"{d}/out/g.json"]),
        ("graph-export-job", BASE["graph export"][:2] + ["--job", "{X}.json", "-o",
                                                         f"{d}/out/g.json"]),
        ("graph-export-vocab", _with("graph export", "--vocab", "{X}.json") + ["--encode"]),
        ("profile-run-campaign", _pos("profile run", "{X}.toml")),
        ("profile-label-runs", _pos("profile label", "{X}")),
        ("profile-plot-trace", _pos("profile plot", "{X}.parquet")),
        ("build-dataset-runs", _with("profile build-dataset", "--runs", "{X}")),
        ("emulate-campaign", _pos("emulate", "{X}.toml")),
        ("emulate-params", _with("emulate", "--params", "{X}.json")),
        ("emulate-catalog", _with("emulate", "--catalog", "{X}.toml")),
        ("estimate-jobs", BASE["estimate"][:1] + ["--jobs", "{X}.csv", "--quiet"]),
        ("estimate-job", BASE["estimate"][:1] + ["--job", "{X}.json", "--quiet"]),
        ("estimate-params", _with("estimate", "--params", "{X}.json")),
        ("estimate-graph", ["estimate", "--graph", "{X}.json", "--devices", "v100", "--quiet"]),
        ("estimate-hf-config", ["estimate", "--hf-config", "{X}.json", "--dataset",
                                "tokens:seq=8", "--batch-size", "2", "--devices", "v100",
                                "--quiet"]),
        ("train-dataset", _with("train", "--dataset", "{X}")),
        ("train-init-from", _with("train", "--init-from", "{X}.pt") + ["--arch", "gnn"]),
        ("evaluate-dataset", _with("evaluate", "--dataset", "{X}")),
        ("evaluate-model", _with("evaluate", "--model", "{X}.pt")),
        ("ablation-dataset", _with("predictor ablation", "--dataset", "{X}")),
        ("predict-model", _with("predict", "--model", "{X}.pt")),
        ("predict-jobs", _with("predict", "--jobs", "{X}.csv")),
        ("predict-graphs", _with("predict", "--graphs", "{X}.parquet")),
        ("allocate-jobs", _with("allocate", "--jobs", "{X}.csv")),
        ("allocate-cluster-file", _with("allocate", "--cluster", "{X}.toml")),
        ("allocate-model-dir", _with("allocate", "--model-dir", "{X}")),
        ("allocate-truth", _with("allocate", "--truth", "{X}")),
        ("tjng-jobs", _with("tjng", "--jobs", "{X}.csv")),
        ("tjng-truth", _with("tjng", "--truth", "{X}")),
        ("tjng-model-dir", _with("tjng", "--model-dir", "{X}")),
        ("schedule-instance", _with("schedule", "--instance", "{X}")),
        ("schedule-generate-source", _with("schedule generate", "--source", "{X}.csv")),
        ("mdrl-train-cluster", _with("mdrl train", "--cluster", "{X}.toml")),
        ("mdrl-train-tjng", _with("mdrl train", "--tjng", "{X}.csv") + ["--durations", "tjng"]),
        ("mdrl-eval-model-dir", _with("mdrl eval", "--model-dir", "{X}")),
        ("mdrl-train-jobs-queue", _with("mdrl train", "--jobs", "{X}.csv")),
        ("specon-k8s-from", _with("specon export-k8s", "--from", "{X}")),
        ("specon-fit-log", _pos("specon fit", "{X}.csv")),
        ("slurm-up-cluster", _with("slurm up", "--cluster", "{X}.toml")),
        ("slurm-submit-plan", _pos("slurm submit", "{X}.csv")),
        ("slurm-submit-jobs", _with("slurm submit", "--jobs", "{X}.csv")),
        ("slurm-collect-out", _with("slurm collect", "-o", "{X}")),
        ("emulator-fit-kernels", _with("emulator fit", "--kernels", "{X}.parquet")),
    ]


def named_cases() -> list[Case]:
    d = "{d}"
    c: list[Case] = []

    def add(family: str, cid: str, argv: list[str]) -> None:
        c.append((family, cid, argv))

    # -- unknown names ---------------------------------------------------------------------
    for cid, argv in [
        ("graph-export-model", _with("graph export", "--model", "nosuchnet")),
        ("graph-export-dataset", _with("graph export", "--dataset", "nosuchdata")),
        ("graph-export-optimizer", _with("graph export", "--optimizer", "nosuchopt")),
        ("graph-export-precision", _with("graph export", "--precision", "fp3")),
        ("graph-export-framework", _with("graph export", "--framework", "jax")),
        ("graph-export-features", _with("graph export", "--features", "nosuch")),
        ("graph-export-hf", ["graph", "export", "--hf", "nosucharch:n_layer=2", "--dataset",
                             "tokens:seq=8", "--batch-size", "2", "-o", f"{d}/out/g.json"]),
        ("graph-export-module", ["graph", "export", "--module", "nosuchpkg.nosuchmod:build",
                                 "--dataset", "cifar10", "--batch-size", "2", "-o",
                                 f"{d}/out/g.json"]),
        ("graph-summary-models", _with("graph summary", "--models", "nosuchnet")),
        ("graph-summary-optimizers", _with("graph summary", "--optimizers", "nosuchopt")),
        ("profile-run-device", _with("profile run", "--device-name", "")),
        ("emulate-devices", _with("emulate", "--devices", "nosuchgpu")),
        ("estimate-model", _with("estimate", "--model", "nosuchnet")),
        ("estimate-devices", _with("estimate", "--devices", "nosuchgpu")),
        ("train-kinds", _with("train", "--kinds", "nosuch")),
        ("train-targets", _with("train", "--targets", "nosuch")),
        ("train-split", _with("train", "--split", "nosuch")),
        ("train-finetune", _with("train", "--finetune", "nosuch")),
        ("train-steps", _with("train", "--steps", "many")),
        ("corpus-devices", _with("predictor corpus", "--devices", "nosuchgpu")),
        ("ablation-seeds", _with("predictor ablation", "--seeds", "a,b")),
        ("predict-device", _with("predict", "--device", "nosuch")),
        ("allocate-policy", _with("allocate", "--policy", "nosuch")),
        ("allocate-order", _with("allocate", "--order", "nosuch")),
        ("allocate-resources", _with("allocate", "--resources", "nosuch")),
        ("allocate-cluster-type", _with("allocate", "--cluster", "nosuchgpu:1")),
        ("allocate-jobs-name", _with("allocate", "--jobs", "table99")),
        ("tjng-cluster-type", _with("tjng", "--cluster", "nosuchgpu:1")),
        ("schedule-generate-source", _with("schedule generate", "--source", "nosuch")),
        ("mdrl-train-cluster", _with("mdrl train", "--cluster", "nosuchcluster")),
        ("mdrl-train-partitions", _with("mdrl train", "--partitions", "Z100")),
        ("mdrl-eval-policies", _with("mdrl eval", "--policies", "nosuch-fit")),
        ("mdrl-fig3-partitions", _with("mdrl fig3", "--partitions", "Z100")),
        ("mdrl-export-policy", _with("mdrl export", "--policy", "nosuch")),
        ("specon-gavel-gpu", _with("specon simulate", "--gavel-gpu", "nosuchgpu")
         + ["--sharing", "measured-pairs"]),
        ("slurm-up-cluster", _with("slurm up", "--cluster", "nosuchcluster")),
    ]:
        add("unknown-name", cid, argv)

    # -- out-of-range numbers the commands refuse ------------------------------------------
    for cid, argv in [
        ("graph-export-batch0", _with("graph export", "--batch-size", "0")),
        ("graph-export-k0", _with("graph export", "--k", "0") + ["--encode"]),
        ("graph-export-grad-accum0", _with("graph export", "--grad-accum", "0")),
        ("graph-export-spe0", _with("graph export", "--steps-per-epoch", "0")),
        ("graph-summary-batch0", _with("graph summary", "--batch-size", "0")),
        ("graph-show-top0", _with("graph show", "--top", "0")),
        ("pipeline-samples0", _with("workloads pipeline", "--samples", "0")),
        ("profile-run-timeout0", _with("profile run", "--timeout-s", "0")),
        ("profile-run-period0", _with("profile run", "--period-s", "0")),
        ("profile-run-max-runs0", _with("profile run", "--max-runs", "0")),
        ("profile-run-cpus0", _with("profile run", "--cpus-per-task", "0")),
        ("estimate-batch0", _with("estimate", "--batch-size", "0")),
        ("estimate-epochs0", _with("estimate", "--epochs", "0")),
        ("train-epochs0", _with("train", "--epochs", "0")),
        ("train-batch0", _with("train", "--batch-size", "0")),
        ("train-lr0", _with("train", "--lr", "0")),
        ("train-hidden0", _with("train", "--hidden", "0")),
        ("train-fraction0", _with("train", "--fraction", "0")),
        ("train-fraction2", _with("train", "--fraction", "2")),
        ("corpus-per-arch0", _with("predictor corpus", "--per-arch", "0")),
        ("predict-workers-neg", _with("predict", "--workers", "-1")),
        ("corpus-minutes0", _with("predictor corpus", "--max-minutes", "0")),
        ("allocate-cluster-count0", _with("allocate", "--cluster", "v100:0")),
        ("allocate-cluster-neg", _with("allocate", "--cluster", "v100:-2")),
        ("allocate-spe0", _with("allocate", "--steps-per-epoch", "0")),
        ("tjng-cluster-count0", _with("tjng", "--cluster", "v100:0")),
        ("tjng-nodes0", _with("tjng", "--nodes", "0")),
        ("schedule-interval-tiny", _with("schedule", "--interval", "0.001")),
        ("schedule-interval-nan", _with("schedule", "--interval", "nan")),
        ("schedule-interval0", _with("schedule", "--interval", "0")),
        ("schedule-max-it0", _with("schedule", "--max-it", "0")),
        ("schedule-generate-nodes0", _with("schedule generate", "--nodes", "0")),
        ("schedule-generate-jobs0", _with("schedule generate", "--jobs", "0")),
        ("mdrl-train-jobs0", _with("mdrl train", "--jobs", "0")),
        ("mdrl-train-episodes0", _with("mdrl train", "--episodes", "0")),
        ("mdrl-train-gamma2", _with("mdrl train", "--gamma", "2")),
        ("mdrl-train-eps2", _with("mdrl train", "--eps-start", "2")),
        ("mdrl-train-batch0", _with("mdrl train", "--batch", "0")),
        ("mdrl-train-hidden0", _with("mdrl train", "--hidden", "0")),
        ("mdrl-eval-seeds0", _with("mdrl eval", "--seeds", "0")),
        ("mdrl-eval-episodes0", _with("mdrl eval", "--episodes", "0")),
        ("mdrl-export-time-scale", _with("mdrl export", "--time-scale", "-3")),
        ("specon-workers0", _with("specon simulate", "--workers", "0")),
        ("specon-interval0", _with("specon simulate", "--interval", "0")),
        ("specon-k8s-cpu", _with("specon export-k8s", "--cpu", "-2")),
        ("slurm-up-timeout0", _with("slurm up", "--timeout-s", "0")),
        ("slurm-submit-time-scale", _with("slurm submit", "--time-scale", "nan")),
        ("schedule-generate-seed-2^32", ["schedule", "generate", "--nodes", "2", "-o", f"{d}/out/x",
                              "--arrivals", "exponential", "--seed", "4294967296"]),
    ]:
        add("number-range", cid, argv)

    # -- oversized sizes and counts ------------------------------------------------------
    for cid, argv in [
        ("allocate-cluster-1e9", _with("allocate", "--cluster", "gtx1080:1000000000")),
        ("allocate-cluster-1e7", _with("allocate", "--cluster", "v100:10000000,a100:1")),
        ("tjng-cluster-1e5", _with("tjng", "--cluster", "v100:100000")),
        ("tjng-nodes-1e9", _with("tjng", "--nodes", "1000000000")),
        ("schedule-generate-nodes-1e6", _with("schedule generate", "--nodes", "1000000")),
        ("schedule-generate-jobs-1e9", _with("schedule generate", "--jobs", "1000000000")),
        ("mdrl-train-replay-1e9", _with("mdrl train", "--replay", "1000000000")),
        ("mdrl-train-hidden-1e6", _with("mdrl train", "--hidden", "1000000")),
        ("mdrl-train-jobs-1e9", _with("mdrl train", "--jobs", "1000000000")),
        ("train-hidden-1e6", _with("train", "--hidden", "1000000")),
        ("specon-workers-1e9", _with("specon simulate", "--workers", "1000000000")),
        ("graph-export-k-1e9", _with("graph export", "--k", "1000000000") + ["--encode"]),
        ("pipeline-samples-1e9", _with("workloads pipeline", "--samples", "1000000000")),
        ("corpus-per-family-1e9", _with("predictor corpus", "--per-family", "1000000000")),
    ]:
        add("oversized", cid, argv)

    # -- missing files / directories given as files ---------------------------------------
    miss = f"{d}/nosuch"
    inputs = file_inputs()
    for cid, argv in inputs:
        add("missing-file", f"{cid}-missing", [a.replace("{X}", miss) for a in argv])
    for cid, argv in inputs:
        if any(a.startswith("{X}.") for a in argv):  # only paths naming a file
            add("dir-as-file", f"{cid}-dir", [a.replace("{X}", f"{d}/dir") for a in argv])

    # -- malformed and empty files, every format --------------------------------------------
    fmt_inputs = [a for a in inputs if any(x.startswith("{X}.") for x in a[1])]
    for prefix, family in (("bad", "malformed"), ("empty", "empty-file")):
        for cid, argv in fmt_inputs:
            add(family, f"{cid}-{prefix}", [a.replace("{X}", f"{d}/{prefix}") for a in argv])
    for cid, argv in [
        ("profile-label-bad-trace", _pos("profile label", f"{d}/runs_badtrace/v100")),
        ("build-dataset-bad-trace", _with("profile build-dataset", "--runs",
                                          f"{d}/runs_badtrace/v100")),
        ("train-corrupt-vocab", _with("train", "--dataset", f"{d}/ds_badvocab")),
        ("evaluate-corrupt-vocab", _with("evaluate", "--dataset", f"{d}/ds_badvocab")),
        ("train-corrupt-labels", _with("train", "--dataset", f"{d}/ds_badlabels")),
        ("schedule-bad-instance", _with("schedule", "--instance", f"{d}/inst_bad")),
        ("allocate-bad-cluster-toml", _with("allocate", "--cluster", f"{d}/bad.toml")),
        ("graph-show-pbtxt", _pos("graph show", f"{d}/bad.pbtxt")),
        ("graph-show-pb", _pos("graph show", f"{d}/bad.pb")),
        ("graph-show-gz", _pos("graph show", f"{d}/bad.json.gz")),
        ("graph-show-binary-json", _pos("graph show", f"{d}/bin.json")),
        ("jobs-check-binary-csv", _pos("jobs check", f"{d}/bin.csv")),
        ("allocate-binary-cluster", _with("allocate", "--cluster", f"{d}/bin.toml")),
        ("mdrl-binary-cluster", _with("mdrl fig3", "--cluster", f"{d}/bin.toml")),
        ("profile-run-binary-campaign", _pos("profile run", f"{d}/bin.toml")),
        ("emulate-binary-catalog", _with("emulate", "--catalog", f"{d}/bin.toml")),
        ("estimate-binary-params", _with("estimate", "--params", f"{d}/bin.json")),
        ("predict-binary-queue", _with("predict", "--jobs", f"{d}/bin.csv")),
    ]:
        add("malformed", cid, argv)

    # -- wrong columns and garbage values -------------------------------------------------
    for cid, argv in [
        ("jobs-check-renamed", _pos("jobs check", f"{d}/q_renamed.csv")),
        ("jobs-check-dup-ids", _pos("jobs check", f"{d}/q_dup.csv")),
        ("jobs-check-neg-batch", _pos("jobs check", f"{d}/q_negbatch.csv")),
        ("jobs-check-nan-arrival", _pos("jobs check", f"{d}/q_nanarrival.csv")),
        ("jobs-check-json-object", _pos("jobs check", f"{d}/q_obj.json")),
        ("predict-renamed-queue", _with("predict", "--jobs", f"{d}/q_renamed.csv")),
        ("allocate-renamed-queue", _with("allocate", "--jobs", f"{d}/q_renamed.csv")),
        ("train-renamed-targets", _with("train", "--dataset", f"{d}/ds_renamed")),
        ("evaluate-renamed-targets", _with("evaluate", "--dataset", f"{d}/ds_renamed")),
        ("train-all-error-labels", _with("train", "--dataset", f"{d}/ds_allerror")),
        ("profile-run-timeout-nan", _pos("profile run", f"{d}/c_nan.toml")),
        ("profile-run-timeout-inf", _pos("profile run", f"{d}/c_inf.toml")),
        ("emulate-timeout-nan", _pos("emulate", f"{d}/c_nan.toml")),
        ("profile-run-no-matrix", _pos("profile run", f"{d}/c_nomatrix.toml")),
        ("emulate-unknown-model", _pos("emulate", f"{d}/c_badmodel.toml")),
        ("schedule-generate-tjng-cols", _with("schedule generate", "--source", f"{d}/q.csv")),
        ("mdrl-train-tjng-cols", _with("mdrl train", "--tjng", f"{d}/q.csv")
         + ["--durations", "tjng"]),
        ("specon-fit-cols", _pos("specon fit", f"{d}/q.csv")),
        ("slurm-submit-plan-cols", _pos("slurm submit", f"{d}/q.csv")),
        ("allocate-cluster-bad-server", _with("allocate", "--cluster", f"{d}/cluster_bad.toml")),
        ("slurm-up-cluster-bad-server", _with("slurm up", "--cluster", f"{d}/cluster_bad.toml")),
        ("tjng-truth-not-dataset", _with("tjng", "--truth", f"{d}/adir")),
        ("allocate-truth-not-dataset", _with("allocate", "--truth", f"{d}/adir")),
        ("emulate-params-wrong", _with("emulate", "--params", f"{d}/q_obj.json")),
        ("profile-plot-run-id", ["profile", "plot", "nosuchrun", "--runs", f"{d}/runs/v100",
                                 "-o", f"{d}/out/p.png"]),
        ("emulator-fit-not-kernels", _with("emulator fit", "--kernels", f"{d}/trace.parquet")),
    ]:
        add("wrong-columns", cid, argv)

    # -- outputs that are inputs ----------------------------------------------------------
    for cid, argv in [
        ("predict-jobs", _with("predict", "-o", f"{d}/q.csv")),
        ("predict-model", _with("predict", "-o", f"{d}/ck.pt")),
        ("graph-export-graph", ["graph", "export", "--graph", f"{d}/g.json", "-o", f"{d}/g.json"]),
        ("train-init-from", _with("train", "--init-from", f"{d}/ck.pt") + ["-o", f"{d}/ck.pt"]),
        ("train-dataset-file", ["train", "--dataset", f"{d}/ds", "-o", f"{d}/ds/labels.parquet"]),
        ("evaluate-model", _with("evaluate", "-o", f"{d}/ck.pt")),
        ("estimate-jobs", ["estimate", "--jobs", f"{d}/q.csv", "-o", f"{d}/q.csv"]),
        ("build-dataset-runs", _with("profile build-dataset", "-o", f"{d}/runs/v100")),
        ("build-dataset-parent", _with("profile build-dataset", "-o", f"{d}/runs")),
        ("profile-plot-trace", _with("profile plot", "-o", f"{d}/trace.parquet")),
        ("allocate-out-holds-jobs", _with("allocate", "-o", d)),
        ("schedule-instance", _with("schedule", "-o", f"{d}/inst")),
        ("tjng-truth", _with("tjng", "--truth", f"{d}/ds") + ["-o", f"{d}/ds"]),
        ("specon-k8s-from", _with("specon export-k8s", "--from", f"{d}/sp") + ["-o", f"{d}/sp"]),
        ("emulate-out-holds-campaign", _with("emulate", "--out", d)),
        ("emulator-fit-out-holds-kernels", _with("emulator fit", "-o", d)),
        ("slurm-submit-out-holds-plan", _with("slurm submit", "-o", d)),
    ]:
        add("output-is-input", cid, argv)

    # -- unknown options, unreachable services, state folders that are files ------------
    for cmd in BASE:
        add("unknown-option", f"{cmd.replace(' ', '-')}--no-such-option",
            [*BASE[cmd], "--no-such-option"])
    for cid, argv in [
        ("ray-refused", _with("profile run", "--backend", "ray") + ["--ray-address",
                                                                     "127.0.0.1:1"]),
        ("ray-malformed", _with("profile run", "--backend", "ray") + ["--ray-address", "nohost"]),
        ("slurm-down-state-file", _with("slurm down", "--state-dir", f"{d}/afile")),
        ("slurm-status-state-file", _with("slurm status", "--state-dir", f"{d}/afile")),
        ("slurm-submit-state-file", _with("slurm submit", "--state-dir", f"{d}/afile")),
        ("slurm-collect-no-record", _with("slurm collect", "-o", f"{d}/adir")),
    ]:
        add("unreachable", cid, argv)

    # -- values outside the choices -----------------------------------------------------
    for cmd, opt in [("graph summary", "--table"), ("workloads pipeline", "--dataset"),
                     ("profile run", "--backend"), ("profile label", "--method"),
                     ("profile build-dataset", "--traces"), ("estimate", "--format"),
                     ("train", "--arch"), ("evaluate", "--baseline"), ("allocate", "--submit"),
                     ("schedule", "--method"), ("schedule", "--proxy"),
                     ("schedule generate", "--arrivals"), ("mdrl train", "--state"),
                     ("mdrl eval", "--reward"), ("mdrl export", "--format"),
                     ("specon simulate", "--workload"), ("specon export-k8s", "--policy")]:
        add("bad-enum", f"{cmd.replace(' ', '-')}{opt}", _with(cmd, opt, "nosuch"))
    return c
