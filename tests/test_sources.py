"""Model sources: user module factories and Hugging Face configs, their graphs,
content-keyed caching, and one-line errors for bad input."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gpuscope.cli import main
from gpuscope.core.data import bundled
from gpuscope.core.errors import InputError
from gpuscope.graphs.export import export_graph
from gpuscope.graphs.storage import GraphCache
from gpuscope.jobs.spec import JobSpec
from gpuscope.workloads.sources import call_factory, hf_config, parse_hf

EXAMPLE = str(Path(__file__).resolve().parents[1] / "examples" / "my_model.py")

_MLP = """
from torch import nn

def build():
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, {hidden}), nn.ReLU(),
                         nn.Linear({hidden}, 10))
"""


def _write(path: Path, hidden: int) -> str:
    path.write_text(textwrap.dedent(_MLP.format(hidden=hidden)))
    return f"{path}:build"


def _job(module: str, **kw) -> JobSpec:
    return JobSpec.from_dict({"module": module, "dataset": "cifar10", "optimizer": "adam",
                              "batch_size": 16, "epochs": 1, **kw})


def test_module_graph_has_its_parameters(tmp_path) -> None:
    g = export_graph(_job(_write(tmp_path / "mlp.py", 64)))
    assert g.meta["param_count"] == 3072 * 64 + 64 + 64 * 10 + 10
    assert {n.phase for n in g.nodes} >= {"forward", "backward", "optimizer"}
    # cross-entropy (10 logits vs 16 labels) was chosen as the loss
    assert any("nll_loss" in n.op for n in g.nodes)


_READS_VALUES = """
import torch
from torch import nn

def build():
    widths = [int(w) for w in torch.linspace(32, 64, 2).tolist()]  # a value read in __init__
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, widths[0]), nn.ReLU(),
                         nn.Linear(widths[0], widths[1]), nn.ReLU(), nn.Linear(widths[1], 10))
"""


@pytest.mark.parametrize("precision", ["fp32", "amp-bf16"])
def test_module_reading_tensor_values_in_init_traces(tmp_path, precision: str) -> None:
    """A factory whose constructor reads a tensor's values builds on meta (fp32) and fake
    (AMP) tensors through ``sources.construct``'s CPU fallback, with all its parameters."""
    (tmp_path / "rv.py").write_text(_READS_VALUES)
    g = export_graph(_job(f"{tmp_path / 'rv.py'}:build", precision=precision))
    assert g.meta["param_count"] == 3072 * 32 + 32 + 32 * 64 + 64 + 64 * 10 + 10


def test_example_module_traces_in_bf16() -> None:
    job = JobSpec.from_dict({"module": f"{EXAMPLE}:build", "dataset": "tokens:seq=128",
                             "optimizer": "adamw", "batch_size": 8, "epochs": 1,
                             "precision": "amp-bf16"})
    g = export_graph(job)
    # embedding 30522x512 + positions 512x512 + 6 encoder layers (3.15 M each) + norm + head
    layer = 4 * 512 * 512 + 4 * 512 + 2 * 512 * 2048 + 2048 + 512 + 2 * 2 * 512
    assert g.meta["param_count"] == 30522 * 512 + 512 * 512 + 6 * layer + 2 * 512 + 512 * 2 + 2
    assert any(n.dtype_bytes == 2 and n.op_class == "matmul" for n in g.nodes)  # bf16 matmuls


def test_module_round_trip_export_estimate_predict(tmp_path) -> None:
    """A user's module file: export, emulate on a catalog GPU, predict with a checkpoint."""
    from gpuscope.cluster.devices import get_device
    from gpuscope.emulator import estimate
    from gpuscope.predictor import load_predictor

    job = _job(_write(tmp_path / "mlp.py", 256), precision="amp-bf16")
    g = export_graph(job)
    e = estimate(job, g, get_device("a100"))
    assert e.status == "ok" and e.iter_s > 0 and e.mem_mb > 0
    df = load_predictor(bundled("checkpoints") / "a100.pt", cache_dir=tmp_path).predict([job])
    assert len(df) == 1 and 0 <= df.iloc[0]["oom_prob"] <= 1


def test_changed_model_same_file_gets_new_graph_and_prediction(tmp_path) -> None:
    from gpuscope.predictor import load_predictor

    path = tmp_path / "net.py"
    small = _job(_write(path, 32))
    key_small, cache_small = small.graph_key, GraphCache(tmp_path).path(small)
    pred = load_predictor(bundled("checkpoints") / "a100.pt", cache_dir=tmp_path)
    p_small = pred.predict([small])[list(pred.targets)].iloc[0].to_numpy(dtype=float)
    big = _job(_write(path, 4096))  # same file name and job fields, other model
    assert big == small and big.graph_key != key_small
    assert GraphCache(tmp_path).path(big) != cache_small
    assert GraphCache(tmp_path).get_or_export(big).meta["param_count"] > 4096 * 3072
    p_big = load_predictor(bundled("checkpoints") / "a100.pt", cache_dir=tmp_path).predict(
        [big])[list(pred.targets)].iloc[0].to_numpy(dtype=float)
    assert (p_small != p_big).any()


def test_factory_may_return_an_input_spec(tmp_path) -> None:
    model, inputs = call_factory(f"{EXAMPLE}:build_with_inputs")
    assert inputs == "tokens:seq=256"
    out = tmp_path / "g.json"
    assert main(["graph", "export", "--module", f"{EXAMPLE}:build_with_inputs",
                 "--batch-size", "2", "-o", str(out)]) == 0
    assert out.is_file()


HF_TINY = {
    "bert": ("bert:num_hidden_layers=2,hidden_size=64,num_attention_heads=4,"
             "intermediate_size=128", "tokens:seq=32", "lm"),
    "gpt2": ("gpt2:n_layer=2,n_embd=64,n_head=4", "tokens:seq=32", "lm"),
    "t5": ("t5:num_layers=2,d_model=64,num_heads=4,d_ff=128,d_kv=16", "tokens:seq=32",
           "seq2seq"),
    "llama": ("llama:num_hidden_layers=2,hidden_size=64,num_attention_heads=4,"
              "intermediate_size=128,num_key_value_heads=2", "tokens:seq=32", "lm"),
    "vit": ("vit:num_hidden_layers=2,hidden_size=64,num_attention_heads=4,intermediate_size=128",
            "image:h=32,w=32,classes=10", "classifier"),
    "swin": ("swin:embed_dim=16,depths=[1,1],num_heads=[2,2],window_size=4",
             "image:h=32,w=32,classes=10", "classifier"),
    "convnext": ("convnext:hidden_sizes=[16,32],depths=[1,1],num_stages=2",
                 "image:h=32,w=32,classes=10", "classifier"),
    "resnet": ("resnet:hidden_sizes=[16,32],depths=[1,1],embedding_size=16",
               "image:h=32,w=32,classes=10", "classifier"),
}


@pytest.mark.parametrize("family", list(HF_TINY))
def test_hf_families_trace_at_tiny_size(family: str) -> None:
    pytest.importorskip("transformers")
    import torch

    from gpuscope.workloads import build_workload

    spec, dataset, kind = HF_TINY[family]
    job = JobSpec.from_dict({"hf": spec, "dataset": dataset, "optimizer": "adamw",
                             "batch_size": 2, "epochs": 1})
    wl = build_workload(job, device="meta")
    assert wl.kind == kind
    g = export_graph(job)
    n_params = sum(p.numel() for p in wl.modules.parameters())
    assert g.meta["param_count"] == n_params > 0
    assert sum(n.phase == "optimizer" for n in g.nodes) > 0
    assert any(n.op_class == "matmul" or n.op_class == "conv" for n in g.nodes)
    # the meta model matches a real CPU model built from the same config
    with torch.device("cpu"):
        real = build_workload(job, device="cpu")
    assert sum(p.numel() for p in real.modules.parameters()) == n_params


def test_hf_model_reading_tensor_values_in_init_traces_under_amp() -> None:
    """ConvNeXt's constructor reads its drop-path schedule (``linspace(...).tolist()``), which
    fake and meta tensors cannot answer: the build falls back to CPU construction with the
    parameters sent to meta, and the AMP (fake-tensor) trace has every parameter."""
    pytest.importorskip("transformers")
    import torch

    from gpuscope.workloads.sources import params_on_meta

    spec, dataset, _ = HF_TINY["convnext"]
    job = JobSpec.from_dict({"hf": spec, "dataset": dataset, "optimizer": "momentum",
                             "batch_size": 2, "epochs": 1, "precision": "amp-bf16"})
    g = export_graph(job)
    with torch.device("cpu"):
        from gpuscope.workloads import build_workload

        real = build_workload(job, device="cpu")
    assert g.meta["param_count"] == sum(p.numel() for p in real.modules.parameters()) > 0
    with params_on_meta():
        lin = torch.nn.Linear(3, 4)
        lin.register_buffer("scale", torch.ones(4))
    assert lin.weight.is_meta and lin.scale.is_meta and lin.weight.requires_grad
    assert not torch.nn.Linear(3, 4).weight.is_meta  # the patch is undone on exit


def test_hf_config_file_and_overrides(tmp_path) -> None:
    pytest.importorskip("transformers")
    assert parse_hf("swin:depths=[2,2],mlp_ratio=4.0,qkv_bias=true") == \
        ("swin", {"depths": [2, 2], "mlp_ratio": 4.0, "qkv_bias": True})
    cfg = hf_config("gpt2:n_layer=3")
    assert cfg.n_layer == 3
    path = tmp_path / "config.json"
    path.write_text(cfg.to_json_string())
    a = JobSpec.from_dict({"hf": str(path), "dataset": "tokens:seq=16", "optimizer": "sgd",
                           "batch_size": 1, "epochs": 1})
    assert a.model == "hf-" + tmp_path.name and export_graph(a).num_nodes > 0


def _err(argv: list[str], capsys) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gpuscope: error:") and "Traceback" not in err
    return err


def test_bad_sources_exit_2_with_one_line(tmp_path, capsys) -> None:
    out = ["-o", str(tmp_path / "g.json"), "--batch-size", "2"]
    ex = ["graph", "export", *out]
    (tmp_path / "raises.py").write_text("def build():\n    raise ValueError('no GPU budget')\n")
    (tmp_path / "notmod.py").write_text("def build():\n    return 42\n")
    (tmp_path / "broken.py").write_text("import not_a_package_xyz\n\ndef build(): ...\n")
    cases = {
        "does not exist": ["--module", str(tmp_path / "missing.py:build"), "--dataset", "cifar10"],
        "defines no 'nope'": ["--module", f"{EXAMPLE}:nope", "--dataset", "tokens"],
        "raised ValueError: no GPU budget": ["--module", f"{tmp_path / 'raises.py'}:build",
                                             "--dataset", "cifar10"],
        "not a torch.nn.Module": ["--module", f"{tmp_path / 'notmod.py'}:build",
                                  "--dataset", "cifar10"],
        "failed to import": ["--module", f"{tmp_path / 'broken.py'}:build", "--dataset", "mnist"],
        "at aten.embedding": ["--module", f"{EXAMPLE}:build", "--dataset", "cifar10"],
        "unknown Hugging Face architecture 'gpt5'": ["--hf", "gpt5", "--dataset", "tokens"],
        "no key(s) n_layers": ["--hf", "gpt2:n_layers=3", "--dataset", "tokens"],
        "needs --dataset": ["--module", f"{EXAMPLE}:build"],
        "one model source": ["--module", f"{EXAMPLE}:build", "--hf", "gpt2", "--dataset", "x"],
    }
    mlp = _write(tmp_path / "mlp.py", 8)  # expects 3x32x32 inputs
    shape = _err([*ex, "--module", mlp, "--input-shape", "3x16x16"], capsys)
    assert "failed at aten.addmm" in shape and "2x3x16x16" in shape
    for needle, argv in cases.items():
        err = _err([*ex, *argv], capsys)
        assert needle in err, (needle, err)


def test_source_fields_in_queue_files(tmp_path) -> None:
    from gpuscope.jobs.queue import read_queue

    q = tmp_path / "q.csv"
    q.write_text("module,hf,dataset,optimizer,batch_size,epochs\n"
                 f"{EXAMPLE}:build,,tokens:seq=64,adamw,4,1\n"
                 ",gpt2:n_layer=2,tokens:seq=64,adam,4,2\n")
    a, b = read_queue(q)
    assert a.model == "my_model.build" and a.source == "module"
    assert b.model == "hf-gpt2" and b.hf == "gpt2:n_layer=2"
    with pytest.raises(InputError, match=r"row 2 \(line 3\), field .batch_size."):
        q.write_text("module,dataset,optimizer,batch_size,epochs\nm.py:f,tokens,adam,4,1\n"
                     "m.py:f,tokens,adam,0,1\n")
        read_queue(q)
