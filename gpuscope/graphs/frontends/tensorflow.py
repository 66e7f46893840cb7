"""TensorFlow frontend (optional ``tf`` extra; TensorFlow is imported lazily).

* ``function_graph(fn, *args)``: any ``tf.function``'s concrete function → GraphDef → OpGraph
  (seed 001 §5.2, Fig. 10: ``get_concrete_function(...).graph.as_graph_def()``), with shapes
  from the concrete function's graph (TensorFlow's shape inference);
* ``keras_train_step_graph(model, ...)``: a Keras model's full training step (forward,
  ``GradientTape`` backward, ``optimizer.apply_gradients``) as a ``tf.function`` → OpGraph;
* ``read_graphdef(path)``: ``.pb`` (binary, needs TensorFlow) or ``.pbtxt`` (text; TensorFlow's
  parser when installed, else ``gpuscope.graphs.frontends.pbtxt``), as written by ``tf.io.write_graph``;
* ``write_graphdef(graph_def, path)``: ``tf.io.write_graph`` by extension.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from gpuscope.core.errors import InputError
from gpuscope.graphs.frontends.graphdef import DTYPE_BYTES, graphdef_to_opgraph
from gpuscope.graphs.frontends.pbtxt import parse_text_proto
from gpuscope.graphs.opgraph import OpGraph


def _tf() -> Any:
    """TensorFlow, or None when it is not installed. The first import runs with file
    descriptor 2 pointed at /dev/null: TensorFlow's C++ start-up logs (oneDNN, CPU features)
    ignore TF_CPP_MIN_LOG_LEVEL and would break the CLI's one-line error contract."""
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        import tensorflow as tf
    except ImportError:
        return None
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
    return tf


def _shapes_of(graph: Any) -> dict[str, tuple[tuple[int, ...] | None, int]]:
    """node name → (first output shape, dtype bytes) from a ``tf.Graph``'s shape inference."""
    out: dict[str, tuple[tuple[int, ...] | None, int]] = {}
    for op in graph.get_operations():
        if not op.outputs:
            continue
        t = op.outputs[0]
        try:
            dims = t.shape.as_list() if t.shape.rank is not None else None
        except ValueError:
            dims = None
        shape = None if dims is None else tuple(-1 if d is None else int(d) for d in dims)
        name = getattr(t.dtype, "name", "float32")
        nbytes = DTYPE_BYTES.get("DT_" + name.upper(), 4)
        out[op.name] = (shape, nbytes)
    return out


def _to_dict(graph_def: Any) -> dict:
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(graph_def, preserving_proto_field_name=True)


def tf_graph_to_opgraph(graph: Any, name: str = "graph", meta: dict | None = None) -> OpGraph:
    """A ``tf.Graph`` (or FuncGraph) → OpGraph, shapes from its ops' outputs."""
    return graphdef_to_opgraph(_to_dict(graph.as_graph_def()), name=name,
                               shapes=_shapes_of(graph), meta=meta)


def function_graph(fn: Any, *args: Any, name: str = "function",
                   meta: dict | None = None) -> OpGraph:
    """OpGraph of ``tf.function`` ``fn`` traced on ``args`` (tensors or TensorSpecs)."""
    tf = _tf()
    if tf is None:
        raise InputError("tracing a tf.function needs tensorflow (pip install 'gpuscope[tf]')")
    if not hasattr(fn, "get_concrete_function"):
        fn = tf.function(fn)
    concrete = fn.get_concrete_function(*args)
    return tf_graph_to_opgraph(concrete.graph, name=name, meta=meta)


def keras_train_step_graph(model: Any, input_shape: tuple[int, ...], num_classes: int,
                           batch_size: int, optimizer: str = "adam",
                           name: str = "keras_model", meta: dict | None = None) -> OpGraph:
    """The training step of a Keras classifier: forward, sparse categorical cross-entropy,
    ``GradientTape`` gradients, ``optimizer.apply_gradients`` (``adam`` or ``sgd`` with
    momentum 0.9), traced as one ``tf.function`` (Driple converts the same TF step graph)."""
    tf = _tf()
    if tf is None:
        raise InputError("exporting a Keras model needs tensorflow (pip install 'gpuscope[tf]')")
    if optimizer == "adam":
        opt = tf.keras.optimizers.Adam(1e-3)
    elif optimizer == "sgd":
        opt = tf.keras.optimizers.SGD(0.01, momentum=0.9)
    else:
        raise InputError(f"unknown optimizer {optimizer!r}; expected sgd or adam")
    if not model.built:
        model.build((batch_size, *input_shape))
    opt.build(model.trainable_variables)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(x: Any, y: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    x = tf.TensorSpec((batch_size, *input_shape), tf.float32)
    y = tf.TensorSpec((batch_size,), tf.int64)
    n_params = int(sum(int(tf.size(v)) for v in model.trainable_variables))
    g_meta = {"optimizer": optimizer, "batch_size": batch_size, "param_count": n_params,
              "param_bytes": 4 * n_params, "input_shape": [batch_size, *input_shape],
              "model": name, "num_classes": num_classes, **(meta or {})}
    return function_graph(train_step, x, y, name=name, meta=g_meta)


def read_graphdef(path: str | Path) -> OpGraph:
    """Read a ``.pb`` (binary) or ``.pbtxt`` (text) GraphDef file into an OpGraph."""
    from gpuscope.core.io import read_bytes

    path = Path(path)
    data = read_bytes(path, "graph file")
    tf = _tf()
    binary = path.suffix.lower() == ".pb"
    if tf is None:
        if binary:
            raise InputError(f"reading binary GraphDef {path} needs tensorflow "
                             "(pip install 'gpuscope[tf]'); a .pbtxt file reads without it")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"graph file {path} is not a text GraphDef (.pbtxt)") from None
        gd = parse_text_proto(text)
        if "node" not in gd:
            raise InputError(f"graph file {path} holds no GraphDef nodes")
        return graphdef_to_opgraph(gd, name=path.stem, meta={"source": str(path)})
    from google.protobuf import text_format
    from google.protobuf.message import DecodeError

    graph_def = tf.compat.v1.GraphDef()
    try:
        if binary:
            graph_def.ParseFromString(data)
        else:
            text_format.Parse(data.decode("utf-8"), graph_def)
    except (DecodeError, text_format.ParseError, UnicodeDecodeError, RecursionError) as e:
        kind = "binary" if binary else "text"
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputError(f"graph file {path} is not a valid {kind} GraphDef: {msg}") from None
    if not graph_def.node:
        raise InputError(f"graph file {path} holds no GraphDef nodes")
    shapes: dict[str, tuple[tuple[int, ...] | None, int]] = {}
    try:  # TensorFlow's shape inference fills shapes the file does not record
        g = tf.Graph()
        with g.as_default():
            tf.graph_util.import_graph_def(graph_def, name="")
        shapes = _shapes_of(g)
    except (ValueError, TypeError, tf.errors.OpError):
        shapes = {}
    return graphdef_to_opgraph(_to_dict(graph_def), name=path.stem, shapes=shapes,
                               meta={"source": str(path)})


def write_graphdef(graph_def: Any, path: str | Path) -> Path:
    """Write a GraphDef with ``tf.io.write_graph`` (text for ``.pbtxt``, binary for ``.pb``)."""
    tf = _tf()
    if tf is None:
        raise InputError("writing a GraphDef needs tensorflow (pip install 'gpuscope[tf]')")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tf.io.write_graph(graph_def, str(path.parent), path.name, as_text=path.suffix == ".pbtxt")
    return path
