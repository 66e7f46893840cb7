"""gpuscope.graphs: PyTorch training-step export, FLOPs, encoding, storage, JSON, CLI errors."""

from __future__ import annotations

import gzip
import json
import math

import networkx as nx
import pytest
import torch
from torch import nn

from gpuscope.cli import main
from gpuscope.core.errors import InputError
from gpuscope.graphs import (
    CONTEXT_DIM,
    CONTEXT_FEATURES,
    FEATURES,
    OP_CLASSES,
    GraphCache,
    OpGraph,
    OpNode,
    OpVocabulary,
    catalog_summary,
    context_vector,
    encode,
    export_graph,
    graph_to_dict,
    group_nodes,
    load_encoded,
    read_graph,
    save_encoded,
    write_graph,
)
from gpuscope.graphs.frontends.graphdef import graphdef_to_opgraph
from gpuscope.graphs.frontends.pbtxt import parse_text_proto
from gpuscope.graphs.frontends.torch import trace_train_step
from gpuscope.jobs.spec import MODEL_DATASETS, MODELS, TABLE3_CNNS, JobSpec

ADAM_STATE_OPS = ("aten._foreach_sqrt.default", "aten._foreach_addcmul_.Scalar",
                  "aten._foreach_lerp_.Scalar")


def _job(model: str, optimizer: str, batch: int = 2) -> JobSpec:
    ds = "cifar10" if "cifar10" in MODEL_DATASETS[model] else MODEL_DATASETS[model][0]
    return JobSpec(model, ds, optimizer, batch, 1)


@pytest.fixture(scope="module")
def resnet20_adam() -> OpGraph:
    return export_graph(_job("resnet20", "adam", 4))


#: Deeper or wider configurations of a catalog builder -> the model that runs the same builder
#: with Adam too. The optimizer step walks the same parameter kinds in both, so tracing these
#: with SGD only (the costly part of this file) still exports every model and every builder
#: with both optimizers.
DEPTH_VARIANTS = {"vgg16": "vgg11", "vgg19": "vgg11", "densenet100_k12": "densenet40_k12",
                  "resnet32": "resnet20", "resnet101": "resnet50", "bert_large": "bert_base",
                  "gpt2_medium": "gpt2", "gpt2_large": "gpt2", "vit_l16": "vit_b16"}


def test_depth_variants_share_their_siblings_builder() -> None:
    from gpuscope.workloads.catalog import CATALOG

    for deep, base in DEPTH_VARIANTS.items():
        a, b = CATALOG[deep].builder, CATALOG[base].builder
        assert a.func is b.func and len(a.args) == len(b.args), (deep, base)
        assert base not in DEPTH_VARIANTS


# -- PyTorch frontend ------------------------------------------------------------------------
@pytest.mark.parametrize("model", MODELS)
def test_every_catalog_model_exports_both_optimizers(model: str, catalog_graphs) -> None:
    opts = ("sgd",) if model in DEPTH_VARIANTS else ("sgd", "adam")
    # batch 32 for the Table 3 CNNs: the Fig. 7 order test traces the same SGD graphs
    batch = 32 if model in TABLE3_CNNS else 2
    graphs = {opt: catalog_graphs.get_or_export(_job(model, opt, batch)) for opt in opts}
    for opt, g in graphs.items():
        g.validate()
        assert nx.is_directed_acyclic_graph(g.to_networkx()), "in-place ops must not make cycles"
        phases = {n.phase for n in g.nodes}
        assert {"forward", "backward", "optimizer"} <= phases, (model, opt, phases)
        assert g.meta["optimizer"] == opt and g.meta["param_count"] > 0
        assert all(n.op_class in OP_CLASSES for n in g.nodes)
        assert g.total_flops("forward") > 0 and g.total_flops("backward") > 0
    sgd_ops = set(graphs["sgd"].op_histogram())
    for op in ADAM_STATE_OPS:  # Adam's moment updates and sqrt; SGD+momentum has none
        assert op not in sgd_ops, op
    if "adam" in graphs:
        assert set(ADAM_STATE_OPS) <= set(graphs["adam"].op_histogram())
        adam_state = {n.name.rsplit(".", 1)[-1] for n in graphs["adam"].nodes
                      if n.name.startswith("state:")}
        assert {"exp_avg", "exp_avg_sq"} <= adam_state
    sgd_state = {n.name.rsplit(".", 1)[-1] for n in graphs["sgd"].nodes if n.name.startswith("state:")}
    assert sgd_state == {"momentum_buffer"}


class _TinyWorkload:
    """A one-layer workload written to the gpuscope.workloads interface."""

    def __init__(self, layer: nn.Module, x: torch.Tensor) -> None:
        self.modules = nn.ModuleDict({"model": layer})
        self.optimizers = [torch.optim.SGD(layer.parameters(), lr=0.1)]
        self.x = x

    def train_step(self, batch: tuple[torch.Tensor]) -> torch.Tensor:
        (opt,) = self.optimizers
        opt.zero_grad(set_to_none=True)
        loss = self.modules["model"](batch[0]).sum()
        loss.backward()
        opt.step()
        return loss.detach()


def _trace_tiny(layer: nn.Module, shape: tuple[int, ...]) -> OpGraph:
    with torch.device("meta"):
        layer = layer.to("meta")
    x = torch.empty(shape, device="meta")
    wl = _TinyWorkload(layer, x)
    return trace_train_step(wl.train_step, (x,), wl.modules, wl.optimizers)


def _flops(g: OpGraph, op: str) -> list[float]:
    return [n.flops for n in g.nodes if n.op == op]


def test_conv_flops_match_hand_computation() -> None:
    # Conv 3->8, 3x3, input 4x3x32x32 -> output 4x8x30x30 = 28800 elements, each a sum of
    # 3*3*3 = 27 products: 2 * 28800 * 27 = 1_555_200 FLOPs (bias not counted).
    g = _trace_tiny(nn.Conv2d(3, 8, 3), (4, 3, 32, 32))
    assert _flops(g, "aten.convolution.default") == [1_555_200.0]
    # backward: the input needs no gradient, so only the weight gradient: one more conv
    assert _flops(g, "aten.convolution_backward.default") == [1_555_200.0]
    conv = next(n for n in g.nodes if n.op == "aten.convolution.default")
    assert conv.shape == (4, 8, 30, 30) and conv.numel == 28800 and conv.op_class == "conv"
    # bytes: input 4*3*32*32 + weight 8*27 + bias 8 + output 28800, all float32
    assert conv.bytes_accessed == 4.0 * (12288 + 216 + 8 + 28800)


def test_linear_flops_match_hand_computation() -> None:
    # Linear 10->5 on a batch of 4: addmm 2*4*10*5 = 400 FLOPs; the weight gradient
    # grad_out^T (5x4) @ x (4x10) = 400 FLOPs.
    g = _trace_tiny(nn.Linear(10, 5), (4, 10))
    assert _flops(g, "aten.addmm.default") == [400.0]
    assert _flops(g, "aten.mm.default") == [400.0]
    # SGD without momentum: one foreach add over the 55 parameters
    upd = [n for n in g.nodes if n.phase == "optimizer" and n.op_class == "optimizer"]
    assert [n.numel for n in upd] == [55] and upd[0].op == "aten._foreach_add_.List"


def test_graph_edges_follow_dataflow() -> None:
    g = _trace_tiny(nn.Linear(10, 5), (4, 10))
    names = [n.name for n in g.nodes]
    addmm = names.index("addmm_0")
    preds = {names[s] for s, d in g.edges if d == addmm}
    assert preds == {"input:0", "param:model.bias", "t_0"}
    upd = next(i for i, n in enumerate(g.nodes) if n.phase == "optimizer")
    ups = {names[s] for s, d in g.edges if d == upd}
    # the update reads both parameters and both gradients (mm via t, and sum via view)
    assert {"param:model.weight", "param:model.bias"} <= ups and len(ups) == 4


# -- encoding --------------------------------------------------------------------------------
def test_encode_shapes_and_determinism(resnet20_adam: OpGraph) -> None:
    g = resnet20_adam
    vocab = OpVocabulary().fit([g])
    d1, d2 = encode(g, vocab), encode(g, vocab)
    assert d1.x.shape == (100, len(FEATURES["driple"])) and d1.x.dtype == torch.float32
    assert torch.equal(d1.x, d2.x) and torch.equal(d1.edge_index, d2.edge_index)
    groups = group_nodes(g)
    members = sorted(v for grp in groups for v in grp)
    assert len(members) == len(set(members))  # a partition of the largest component
    assert d1.x[:, 1].sum().item() == len(members)  # column 1 counts ops
    assert [grp[0] for grp in groups] == sorted(grp[0] for grp in groups)
    assert d1.edge_index.max() < 100 and (d1.edge_index[0] != d1.edge_index[1]).all()
    rich = encode(g, vocab, features="rich")
    assert rich.x.shape == (100, 6 + len(OP_CLASSES))
    assert torch.equal(rich.x[:, 6:].sum(1), d1.x[:, 1])  # class histogram sums to op count
    coarse = encode(g, vocab, grouping="coarsen")
    assert coarse.x.shape[0] == 100 and coarse.x[:, 1].sum().item() == len(members)


def _chain() -> OpGraph:
    nodes = [OpNode("a", "Const", "constant", (2, 3), 6), OpNode("b", "Relu", "activation", (2, 3), 6),
             OpNode("c", "Relu", "activation", (4,), 4), OpNode("lonely", "NoOp", "control")]
    return OpGraph("chain", nodes, [(0, 1), (1, 2)])


def test_encode_small_graph_by_hand() -> None:
    g = _chain()
    vocab = OpVocabulary().fit([g])  # Const 1/4, Relu 2/4, NoOp 1/4
    d = encode(g, vocab, k=100)
    # component {a, b, c} (lonely dropped), one group per node, in node order
    assert d.x.tolist() == [[6.0, 1.0, 0.25], [6.0, 1.0, 0.5], [4.0, 1.0, 0.5]]
    assert d.edge_index.tolist() == [[0, 1, 1, 2], [1, 0, 2, 1]]
    d2 = encode(g, vocab, k=2)
    assert d2.x.shape == (2, 3) and d2.x[:, 0].sum().item() == 16 and d2.x[:, 1].sum().item() == 3
    assert d2.edge_index.tolist() == [[0, 1], [1, 0]]
    with pytest.raises(InputError):
        encode(OpGraph("empty"), vocab)


def test_vocabulary_fit_save_load(tmp_path, resnet20_adam: OpGraph) -> None:
    v = OpVocabulary().fit([resnet20_adam, _chain()])
    assert math.isclose(sum(v.frequency(op) for op in v.counts_), 1.0)
    n_conv = resnet20_adam.op_histogram()["aten.convolution.default"]
    assert v.frequency("aten.convolution.default") == n_conv / (resnet20_adam.num_nodes + 4)
    assert v.frequency("NeverSeen") == 0.0
    v2 = OpVocabulary.load(v.save(tmp_path / "vocab.json"))
    assert v2 == v and v2.frequency("Relu") == v.frequency("Relu")
    (tmp_path / "bad.json").write_text("[1]")
    with pytest.raises(InputError):
        OpVocabulary.load(tmp_path / "bad.json")


def test_context_vector_by_hand() -> None:
    job = JobSpec("resnet20", "cifar10", "adam", 32, 10)
    u = context_vector(job)
    steps = math.ceil(50_000 / 32)  # 1563
    expected = [5.0, 10.0, math.log10(steps), math.log10(steps * 10)]
    expected += [0.0, 1.0]  # optimizers (sgd, adam)
    expected += [0.0, 1.0, 0.0]  # datasets (imagenet, cifar10, mnist)
    assert u.shape == (CONTEXT_DIM,) == (len(CONTEXT_FEATURES),)
    assert torch.allclose(u, torch.tensor(expected, dtype=torch.float32))


# -- storage and files -----------------------------------------------------------------------
def test_save_load_encoded_round_trip(tmp_path, resnet20_adam: OpGraph) -> None:
    vocab = OpVocabulary().fit([resnet20_adam])
    mapping = {"r20": encode(resnet20_adam, vocab, features="rich"), "chain": encode(_chain(), vocab)}
    p = save_encoded(tmp_path / "graphs.parquet", mapping)
    assert p.read_bytes()[:4] == b"PAR1"
    back = load_encoded(p)
    assert sorted(back) == ["chain", "r20"]
    for k, d in mapping.items():
        assert torch.equal(back[k].x, d.x) and torch.equal(back[k].edge_index, d.edge_index)


def test_json_round_trip_identical(tmp_path, resnet20_adam: OpGraph) -> None:
    for name in ("g.json", "g.json.gz"):
        back = read_graph(write_graph(resnet20_adam, tmp_path / name))
        assert graph_to_dict(back) == graph_to_dict(resnet20_adam)
    with gzip.open(tmp_path / "g.json.gz", "rt") as fh:
        assert json.load(fh)["format"] == "gpuscope.opgraph/1"


def test_pbtxt_written_by_gpuscope_round_trips_structure(tmp_path, monkeypatch) -> None:
    import gpuscope.graphs.frontends.tensorflow as tff

    monkeypatch.setattr(tff, "_tf", lambda: None)  # the text parser path, without TensorFlow
    g = _trace_tiny(nn.Linear(10, 5), (4, 10))
    back = read_graph(write_graph(g, tmp_path / "g.pbtxt"))
    assert [n.op for n in back.nodes] == [n.op for n in g.nodes]
    assert [n.shape for n in back.nodes] == [n.shape for n in g.nodes]
    assert [n.op_class for n in back.nodes] == [n.op_class for n in g.nodes]
    assert [n.phase for n in back.nodes] == [n.phase for n in g.nodes]
    assert [n.flops for n in back.nodes] == [n.flops for n in g.nodes]
    assert [n.bytes_accessed for n in back.nodes] == [n.bytes_accessed for n in g.nodes]
    assert sorted(back.edges) == sorted(set(g.edges))


def test_cpu_trace_equals_meta_trace() -> None:
    from gpuscope.graphs.export import export_torch

    job = _job("lenet", "adam")
    meta, cpu = export_torch(job, "meta"), export_torch(job, "cpu")
    assert graph_to_dict(meta)["nodes"] == graph_to_dict(cpu)["nodes"]
    assert meta.edges == cpu.edges


FIG11 = """
node {
  name: "x"
  op: "Placeholder"
  attr { key: "_user_specified_name" value { s: "x" } }
  attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "shape" value { shape { } } }
}
node { name: "Greater/y" op: "Const"
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 0 } } } }
node { name: "Greater" op: "Greater" input: "x" input: "Greater/y" }
node { name: "cond" op: "StatelessIf" input: "Greater" input: "x"
  attr { key: "then_branch" value { func { name: "cond_true_6" } } } }
library { function { signature { name: "cond_true_6" input_arg { name: "x" type: DT_INT32 } }
  node_def { name: "Identity" op: "Identity" input: "x" } } }
"""


def test_text_proto_parser_reads_fig11_without_tensorflow() -> None:
    g = graphdef_to_opgraph(parse_text_proto(FIG11), name="fig11")
    assert [n.name for n in g.nodes] == ["x", "Greater/y", "Greater", "cond",
                                         "cond/cond_true_6/Identity"]
    assert [n.op_class for n in g.nodes] == ["constant", "constant", "elementwise", "control",
                                             "control"]
    assert g.edges == [(0, 2), (1, 2), (2, 3), (0, 3), (3, 4)]
    assert g.nodes[0].shape == () and g.nodes[0].numel == 1 and g.nodes[0].phase == "data"
    with pytest.raises(InputError):
        parse_text_proto("node { name: ")


def test_graph_cache_exports_once(tmp_path, monkeypatch) -> None:
    import gpuscope.graphs.export as export_mod

    calls = []
    real = export_mod.export_graph

    def counting(job: JobSpec) -> OpGraph:
        calls.append(job.graph_key)
        return real(job)

    monkeypatch.setattr(export_mod, "export_graph", counting)
    monkeypatch.setenv("GPUSCOPE_CACHE", str(tmp_path))
    cache = GraphCache()
    job = _job("lenet", "sgd")
    g1, g2 = cache.get_or_export(job), cache.get_or_export(job.with_(epochs=7))
    assert calls == [job.graph_key] and job in cache
    assert cache.path(job).parent == tmp_path / "graphs"
    assert graph_to_dict(g1) == graph_to_dict(g2)


def test_catalog_summary_columns() -> None:
    df = catalog_summary([_job("lenet", "sgd"), _job("lenet", "sgd").with_(epochs=5),
                          _job("trivial", "adam")], progress=False)
    assert list(df.columns) == ["model", "dataset", "optimizer", "batch_size", "nodes", "edges",
                                "param_count", "gflops_per_step", "export_s"]
    assert len(df) == 2 and (df["nodes"] > 10).all()
    # trivial on cifar10: 3072*1 + 1 + 1*4096 + 4096 + 4096*10 + 10 parameters
    assert df.loc[df.model == "trivial", "param_count"].item() == 3073 + 8192 + 40970


# -- CLI -------------------------------------------------------------------------------------
def test_cli_export_and_show(tmp_path, capsys) -> None:
    out = tmp_path / "g.json"
    rc = main(["graph", "export", "--model", "lenet", "--dataset", "cifar10", "--optimizer",
               "adam", "--batch-size", "8", "-o", str(out), "--encode"])
    assert rc == 0 and out.is_file() and (tmp_path / "g.parquet").is_file()
    assert main(["graph", "show", str(out)]) == 0
    text = capsys.readouterr().out
    assert "op histogram" in text and "aten.convolution.default" in text and "class histogram" in text


def _bad_graph_files(tmp_path) -> list[str]:
    files = {
        "notjson.json": "{nodes: [",
        "nokey.json": json.dumps({"nodes": []}),
        "badedge.json": json.dumps({"nodes": [{"name": "a", "op": "X"}], "edges": [[0, 3]]}),
        "badnode.json": json.dumps({"nodes": [{"op": "X"}], "edges": []}),
        "array.json": "[1, 2]",
        "bad.pbtxt": "node { name: \"a\" op: ",
        "graph.txt": "hello",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    return [str(tmp_path / n) for n in [*files, "binary.json", "missing.json"]]


def test_cli_bad_inputs_exit_2_with_one_line(tmp_path, capsys) -> None:
    export = ["graph", "export", "-o", str(tmp_path / "o.json")]
    cases = [
        export + ["--model", "nope", "--dataset", "cifar10", "--batch-size", "8"],
        export + ["--model", "lenet", "--dataset", "svhn", "--batch-size", "8"],
        export + ["--model", "lenet", "--dataset", "cifar10", "--optimizer", "lamb", "--batch-size", "8"],
        export + ["--model", "lenet", "--dataset", "cifar10", "--batch-size", "0"],
        export + ["--model", "lenet", "--dataset", "cifar10", "--batch-size", "-3"],
        export + ["--model", "lenet", "--dataset", "cifar10"],
        export + ["--job", str(tmp_path / "nojob.json")],
        ["graph", "summary", "--models", "nope"],
        ["graph", "summary", "--batch-size", "0"],
    ] + [["graph", "show", f] for f in _bad_graph_files(tmp_path)]
    for argv in cases:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exc:
            raise SystemExit(main(argv))
        err = capsys.readouterr().err
        assert exc.value.code == 2, (argv, err)
        assert err.count("\n") == 1 and err.startswith("gpuscope: error:"), (argv, err)
        assert "Traceback" not in err


def test_graph_cache_digest_covers_every_tracer_module(tmp_path, monkeypatch):
    """A graph cached before a tracer change must never be served after it: the cache key
    hashes every module of gpuscope.graphs and gpuscope.workloads plus the job/dataset specs,
    and changes when any one of them does (here: the fused recurrent ops alone)."""
    from pathlib import Path

    import gpuscope.graphs.storage as storage

    root = Path(storage.__file__).resolve().parents[1]
    names = {f.relative_to(root).as_posix() for f in storage.digest_sources()}
    expected = {f.relative_to(root).as_posix() for d in ("graphs", "workloads")
                for f in (root / d).rglob("*.py")} | {"jobs/spec.py", "jobs/catalog.py",
                                                       "jobs/datasets.py"}
    assert names == expected and "graphs/ops/recurrent.py" in names
    digest = storage.code_digest.__wrapped__  # memoised per process: call the function itself
    before = digest()
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: real(p) + (
        b"# edited" if p.name == "recurrent.py" else b""))
    assert digest() != before
