"""gpuscope.graphs with TensorFlow: Keras training steps, tf.function GraphDefs (.pb/.pbtxt)
written by TensorFlow (seed 001 §5.2, Figs. 10–11), including non-neural-network functions."""

from __future__ import annotations

import pytest

from gpuscope.cli import main
from gpuscope.graphs import (
    OpVocabulary,
    encode,
    export_graph,
    function_graph,
    keras_train_step_graph,
    read_graph,
)
from gpuscope.jobs.spec import JobSpec

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")


def _keras_model():
    return tf.keras.Sequential([
        tf.keras.layers.Conv2D(4, 3, activation="relu"),
        tf.keras.layers.BatchNormalization(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(10),
    ])


@pytest.fixture(scope="module")
def keras_graphs():
    return {opt: keras_train_step_graph(_keras_model(), (8, 8, 3), 10, 2, optimizer=opt)
            for opt in ("sgd", "adam")}


def test_keras_train_step_graph(keras_graphs) -> None:
    for opt, g in keras_graphs.items():
        g.validate()
        ops = g.op_histogram()
        for op in ("Conv2D", "Conv2DBackpropFilter", "MatMul", "FusedBatchNormV3" if
                   "FusedBatchNormV3" in ops else "Rsqrt", "SparseSoftmaxCrossEntropyWithLogits"):
            assert ops[op] >= 1, (opt, op)
        assert {"forward", "backward", "optimizer"} <= {n.phase for n in g.nodes}
        # 3x3x3->4 conv on 2x8x8x3 (valid): out 2x6x6x4 = 288 elements x 27 MACs x 2
        conv = next(n for n in g.nodes if n.op == "Conv2D")
        assert conv.shape == (2, 6, 6, 4) and conv.flops == 2 * 288 * 27
        # dense 144->10 on 2 rows: 2*2*144*10
        assert any(n.op == "MatMul" and n.flops == 5760 and n.phase == "forward" for n in g.nodes)
        # conv 4 + bn 8 + dense 1450 trainable parameters
        assert g.meta["param_count"] == (27 * 4 + 4) + 8 + (144 * 10 + 10)
    adam_sqrt = [n for n in keras_graphs["adam"].nodes if n.op == "Sqrt" and n.phase == "optimizer"]
    sgd_sqrt = [n for n in keras_graphs["sgd"].nodes if n.op == "Sqrt" and n.phase == "optimizer"]
    assert adam_sqrt and not sgd_sqrt  # Adam's second-moment update; SGD has none
    vocab = OpVocabulary().fit(keras_graphs.values())
    d = encode(keras_graphs["adam"], vocab, k=20)
    assert d.x.shape == (20, 3)


def simple_relu(x):
    """Seed 001 Fig. 10's function (autograph turns the branch into a StatelessIf)."""
    if tf.greater(x, 0):
        return x
    else:
        return 0


def test_fig10_pbtxt_written_by_tensorflow(tmp_path, capsys, monkeypatch) -> None:
    tf_simple_relu = tf.function(simple_relu)
    graph_def = tf_simple_relu.get_concrete_function(tf.constant(1)).graph.as_graph_def()
    tf.io.write_graph(graph_def, str(tmp_path), "sample_graph.pbtxt")
    g = read_graph(tmp_path / "sample_graph.pbtxt")
    ops = g.op_histogram()
    assert ops["Placeholder"] == 1 and ops["Greater"] == 1 and ops["StatelessIf"] == 1
    x = next(n for n in g.nodes if n.name == "x")
    assert x.op_class == "constant" and x.shape == () and x.dtype_bytes == 4
    # both branches are inlined below the If node
    assert any("/cond_true" in n.name for n in g.nodes) and any("/cond_false" in n.name for n in g.nodes)
    import gpuscope.graphs.frontends.tensorflow as tff

    monkeypatch.setattr(tff, "_tf", lambda: None)  # the same file through the text parser
    g2 = read_graph(tmp_path / "sample_graph.pbtxt")
    assert [(n.name, n.op) for n in g2.nodes] == [(n.name, n.op) for n in g.nodes]
    assert g2.edges == g.edges
    monkeypatch.undo()
    assert main(["graph", "show", str(tmp_path / "sample_graph.pbtxt")]) == 0
    assert "StatelessIf" in capsys.readouterr().out


def test_non_nn_function_pb(tmp_path) -> None:
    @tf.function
    def matrix_cube_sum(a):
        return tf.reduce_sum(tf.linalg.matmul(tf.linalg.matmul(a, a), a))

    concrete = matrix_cube_sum.get_concrete_function(tf.TensorSpec((16, 16), tf.float32))
    tf.io.write_graph(concrete.graph.as_graph_def(), str(tmp_path), "cube.pb", as_text=False)
    g = read_graph(tmp_path / "cube.pb")
    mm = [n for n in g.nodes if n.op == "MatMul"]
    assert len(mm) == 2 and all(n.shape == (16, 16) and n.flops == 2 * 16**3 for n in mm)
    s = next(n for n in g.nodes if n.op == "Sum")
    assert s.op_class == "reduction" and s.flops == 256
    names = [n.name for n in g.nodes]
    assert (names.index("a"), names.index("MatMul")) in g.edges  # one edge for MatMul(a, a)
    assert g.edges.count((names.index("a"), names.index("MatMul"))) == 1
    # the same through function_graph, no file
    g2 = function_graph(matrix_cube_sum, tf.TensorSpec((16, 16), tf.float32))
    assert [n.op for n in g2.nodes] == [n.op for n in g.nodes]
    # a job can carry the file as its graph
    job = JobSpec("cube", "mnist", "sgd", 1, 1, graph=str(tmp_path / "cube.pb"))
    assert export_graph(job).num_nodes == g.num_nodes and job.graph_key == "cube-mnist-sgd-b1"


def test_bad_pb_file_exit_2(tmp_path, capsys) -> None:
    (tmp_path / "bad.pb").write_bytes(b"\x0a\xff\xff\xff garbage")
    (tmp_path / "empty.pbtxt").write_text("")
    for f in ("bad.pb", "empty.pbtxt"):
        assert main(["graph", "show", str(tmp_path / f)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("gpuscope: error:") and err.count("\n") == 1, err


@pytest.mark.parametrize("model", ["lenet", "resnet20"])
def test_keras_catalog_versions_match_pytorch(model) -> None:
    from gpuscope.workloads import build_workload, param_count

    graphs = {opt: export_graph(JobSpec(model, "cifar10", opt, 2, 1, framework="tensorflow"))
              for opt in ("sgd", "adam")}
    torch_params = param_count(build_workload(JobSpec(model, "cifar10", "sgd", 2, 1), "meta"))
    for g in graphs.values():
        assert g.meta["framework"] == "tensorflow" and g.meta["param_count"] == torch_params
        assert g.op_histogram()["Conv2DBackpropFilter"] >= 2
    assert any(n.op == "Sqrt" and n.phase == "optimizer" for n in graphs["adam"].nodes)
    assert not any(n.op == "Sqrt" and n.phase == "optimizer" for n in graphs["sgd"].nodes)


def test_tensorflow_job_without_keras_version_exit_2(tmp_path, capsys) -> None:
    rc = main(["graph", "export", "--model", "googlenet", "--dataset", "cifar10",
               "--batch-size", "2", "--framework", "tensorflow", "-o", str(tmp_path / "g.json")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "no TensorFlow (Keras) version" in err
