"""TensorFlow GraphDef → OpGraph (seed 001 §5.2, Figs. 10–11; Driple's TensorFlow graphs).

Input is a GraphDef as a dict: either ``MessageToDict(graph_def, preserving_proto_field_name=
True)`` (TensorFlow installed) or ``parse_text_proto`` output (a ``.pbtxt`` without
TensorFlow); the accessors below read both. Nodes' ``input`` strings give edges (``name``,
``name:1``, ``^ctrl`` control dependencies). Functions called by the graph (``StatefulPartitionedCall``'s
``f``, ``If``'s branches, ``While``'s cond/body) are inlined once per call as ``call/node``
nodes, each linked from its call node (depth ≤ 4), so a tf.function's control flow is in the
graph. Shapes: ``shapes`` (from TensorFlow's shape inference, when given), else the
``_output_shapes`` attr, else a Placeholder's ``shape`` / a Const's tensor shape; unknown
dimensions are -1 and an unknown shape has ``numel`` 0. Phase from names:
``gradient_tape/``/``gradients/`` → backward, optimizer ops and names → optimizer.
"""

from __future__ import annotations

import base64
import math
import re
from typing import Any, TypeGuard

from gpuscope.graphs.opgraph import OP_CLASSES, PHASES, OpGraph, OpNode

_TF_CLASSES: dict[str, tuple[str, ...]] = {
    "conv": ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "Conv3D",
             "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
             "DepthwiseConv2dNativeBackpropFilter", "Conv1D", "_FusedConv2D", "Conv2DV2"),
    "matmul": ("MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum",
               "_FusedMatMul", "SparseMatMul", "MatrixPower"),
    "norm": ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "FusedBatchNormGrad",
             "FusedBatchNormGradV2", "FusedBatchNormGradV3", "LRN", "LRNGrad"),
    "pool": ("MaxPool", "MaxPoolV2", "MaxPoolGrad", "MaxPoolGradV2", "AvgPool", "AvgPoolGrad",
             "MaxPool3D", "AvgPool3D", "MaxPoolWithArgmax"),
    "activation": ("Relu", "ReluGrad", "Relu6", "Relu6Grad", "Sigmoid", "SigmoidGrad", "Tanh",
                   "TanhGrad", "Softmax", "LogSoftmax", "Elu", "EluGrad", "Selu", "SeluGrad",
                   "LeakyRelu", "LeakyReluGrad", "Softplus", "SoftplusGrad", "Gelu"),
    "loss": ("SparseSoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits"),
    "reduction": ("Sum", "Mean", "Max", "Min", "Prod", "ArgMax", "ArgMin", "All", "Any",
                  "BiasAddGrad", "L2Loss", "Cumsum", "EuclideanNorm"),
    "elementwise": ("Add", "AddV2", "AddN", "Sub", "Mul", "MulNoNan", "RealDiv", "Div",
                    "DivNoNan", "FloorDiv", "FloorMod", "Sqrt", "Rsqrt", "SqrtGrad",
                    "RsqrtGrad", "Square", "SquaredDifference", "Pow", "Exp", "Log", "Log1p",
                    "Neg", "Abs", "Sign", "Maximum", "Minimum", "Greater", "GreaterEqual",
                    "Less", "LessEqual", "Equal", "NotEqual", "LogicalAnd", "LogicalOr",
                    "LogicalNot", "Select", "SelectV2", "BiasAdd", "Reciprocal", "Cast",
                    "ClipByValue", "Floor", "Ceil", "Round", "IsFinite", "Erf"),
    "optimizer": ("ApplyAdam", "ResourceApplyAdam", "ApplyGradientDescent",
                  "ResourceApplyGradientDescent", "ApplyMomentum", "ResourceApplyMomentum",
                  "ResourceApplyKerasMomentum", "ApplyRMSProp", "ResourceApplyRMSProp",
                  "ResourceApplyAdagrad", "ResourceApplyAdagradV2", "ResourceApplyAdamWithAmsgrad",
                  "AssignSubVariableOp", "AssignAddVariableOp"),
    "data_movement": ("Reshape", "Transpose", "ConcatV2", "Concat", "Pack", "Unpack", "Slice",
                      "StridedSlice", "StridedSliceGrad", "Gather", "GatherV2", "GatherNd",
                      "Shape", "ShapeN", "Size", "Rank", "ExpandDims", "Squeeze", "Tile",
                      "Pad", "PadV2", "MirrorPad", "BroadcastTo", "BroadcastArgs",
                      "BroadcastGradientArgs", "Split", "SplitV", "ReadVariableOp",
                      "ResourceGather", "ScatterNd", "TensorScatterUpdate", "OneHot",
                      "DynamicStitch", "Reverse", "ReverseV2", "Bitcast", "Fill",
                      "AssignVariableOp", "IteratorGetNext"),
    "constant": ("Const", "Placeholder", "PlaceholderWithDefault", "VarHandleOp", "VariableV2",
                 "Variable", "_Arg", "ZerosLike", "OnesLike", "Range", "HostConst"),
    "random": ("RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt",
               "StatelessRandomUniformV2", "StatelessRandomNormalV2",
               "StatelessRandomGetKeyCounter", "StatelessTruncatedNormalV2", "Multinomial",
               "RandomShuffle"),
    "control": ("NoOp", "Identity", "IdentityN", "If", "StatelessIf", "While", "StatelessWhile",
                "PartitionedCall", "StatefulPartitionedCall", "Assert", "Switch", "Merge",
                "Enter", "Exit", "NextIteration", "LoopCond", "_Retval", "StopGradient",
                "PreventGradient", "Case", "StatelessCase", "CheckNumerics", "Print",
                "PrintV2", "StringFormat"),
}
TF_OP_CLASS: dict[str, str] = {op: c for c, ops in _TF_CLASSES.items() for op in ops}

DTYPE_BYTES: dict[str, int] = {
    "DT_FLOAT": 4, "DT_DOUBLE": 8, "DT_INT32": 4, "DT_UINT8": 1, "DT_INT16": 2, "DT_INT8": 1,
    "DT_COMPLEX64": 8, "DT_INT64": 8, "DT_BOOL": 1, "DT_BFLOAT16": 2, "DT_UINT16": 2,
    "DT_COMPLEX128": 16, "DT_HALF": 2, "DT_UINT32": 4, "DT_UINT64": 8,
}
_FUNC_ATTRS: tuple[str, ...] = ("f", "then_branch", "else_branch", "body", "cond", "branches")
_MAX_DEPTH = 4


def _get(d: Any, key: str, default: Any = None) -> Any:
    """Field ``key`` of a dict from either parser (text parser values are lists)."""
    if not isinstance(d, dict) or key not in d:
        return default
    v = d[key]
    return (v[0] if v else default) if isinstance(v, list) else v


def _getlist(d: Any, key: str) -> list[Any]:
    if not isinstance(d, dict) or key not in d:
        return []
    v = d[key]
    return v if isinstance(v, list) else [v]


def _attrs(node: dict) -> dict[str, Any]:
    """attr map: MessageToDict gives {key: value}; the text parser [{key, value}, ...]."""
    a = node.get("attr", {})
    if isinstance(a, dict):
        return a
    return {_get(e, "key"): _get(e, "value", {}) for e in a if isinstance(e, dict)}


def _shape_of(shape: Any) -> tuple[int, ...] | None:
    if not isinstance(shape, dict) or _get(shape, "unknown_rank", False):
        return None
    return tuple(int(_get(d, "size", -1)) for d in _getlist(shape, "dim"))


def _attr_shape(op: str, attrs: dict[str, Any]) -> tuple[int, ...] | None:
    shapes = _getlist(_get(attrs.get("_output_shapes", {}), "list", {}), "shape")
    if shapes:
        return _shape_of(shapes[0])
    if op in ("Placeholder", "PlaceholderWithDefault") and "shape" in attrs:
        return _shape_of(_get(attrs["shape"], "shape"))
    if op == "Const" and "value" in attrs:
        return _shape_of(_get(_get(attrs["value"], "tensor", {}), "tensor_shape", {}))
    return None


def _dtype_bytes(attrs: dict[str, Any]) -> int:
    for key in ("T", "dtype", "DstT", "out_type"):
        t = _get(attrs.get(key, {}), "type")
        if isinstance(t, str) and t in DTYPE_BYTES:
            return DTYPE_BYTES[t]
    return 4


def _numel(shape: tuple[int, ...] | None) -> int:
    if shape is None or any(s < 0 for s in shape):
        return 0
    return int(math.prod(shape))


def tf_op_class(op: str) -> str:
    return TF_OP_CLASS.get(op, "other")


#: Name scopes of optimizer updates (Keras uniquifies them: adam, adam_1, ...).
_OPTIMIZER_SCOPE = re.compile(
    r"(^|/)(adam|adamw|sgd|rmsprop|adagrad|momentum|optimizer|apply_gradients)(_\d+)?(/|$)")


def tf_phase(name: str, op: str) -> str:
    low = name.lower()
    if op in ("Placeholder", "IteratorGetNext") and "/" not in name:
        return "data"
    if TF_OP_CLASS.get(op) == "optimizer" or _OPTIMIZER_SCOPE.search(low):
        return "optimizer"
    if low.startswith(("gradient_tape/", "gradients/")) or "/gradient_tape/" in low:
        return "backward"
    return "forward"


def tf_flops(op: str, out_shape: tuple[int, ...] | None, in_shapes: list[tuple[int, ...] | None],
             attrs: dict[str, Any]) -> float | None:
    """FLOPs (2 per multiply-add) of TF ops, from output and input shapes (NHWC filters are
    ``[kh, kw, cin, cout]``); elementwise ops 1 per output element; None when unknown."""
    out_n = _numel(out_shape)
    klass = tf_op_class(op)

    def known(s: tuple[int, ...] | None) -> TypeGuard[tuple[int, ...]]:
        return s is not None and all(d >= 0 for d in s)

    if op in ("Conv2D", "_FusedConv2D", "DepthwiseConv2dNative") and len(in_shapes) > 1 and known(in_shapes[1]):
        f = in_shapes[1]
        per = f[0] * f[1] * (1 if op == "DepthwiseConv2dNative" else f[2])
        return 2.0 * out_n * per if out_n else None
    if op in ("Conv2DBackpropInput", "Conv2DBackpropFilter") and len(in_shapes) > 2:
        grad, filt = in_shapes[2], in_shapes[1] if op == "Conv2DBackpropInput" else out_shape
        if known(grad) and known(filt) and filt and len(filt) == 4:
            return 2.0 * _numel(grad) * filt[0] * filt[1] * filt[2]
        return None
    if op in ("MatMul", "_FusedMatMul") and len(in_shapes) > 1 and known(in_shapes[0]) and known(in_shapes[1]):
        a = in_shapes[0]
        ta = bool(_get(attrs.get("transpose_a", {}), "b", False))
        k = a[0] if ta else a[-1]
        return 2.0 * out_n * k if out_n else None
    if op.startswith("BatchMatMul") and len(in_shapes) > 1 and known(in_shapes[0]) and in_shapes[0]:
        adj = bool(_get(attrs.get("adj_x", {}), "b", False))
        a = in_shapes[0]
        return 2.0 * out_n * (a[-2] if adj else a[-1]) if out_n else None
    if klass in ("constant", "data_movement", "control"):
        return 0.0
    if klass == "reduction":
        return float(_numel(in_shapes[0])) if in_shapes and known(in_shapes[0]) else None
    if klass == "norm":
        return 5.0 * out_n if out_n else None
    if klass in ("elementwise", "activation", "loss", "optimizer", "pool", "random"):
        return float(out_n) if out_n else None
    return None


def _b2s(v: Any) -> str:
    """MessageToDict renders ``bytes`` attrs base64; the text parser gives plain text."""
    v = str(v)
    if v in OP_CLASSES or v in PHASES:
        return v
    try:
        dec = base64.b64decode(v, validate=True).decode("ascii")
    except (ValueError, UnicodeDecodeError):
        return v
    return dec if dec in OP_CLASSES or dec in PHASES else v


def _func_library(gd: dict) -> dict[str, dict]:
    lib = _get(gd, "library", {}) or {}
    out = {}
    for f in _getlist(lib, "function"):
        name = _get(_get(f, "signature", {}), "name")
        if name:
            out[str(name)] = f
    return out


def graphdef_to_opgraph(gd: dict, name: str = "graph",
                        shapes: dict[str, tuple[tuple[int, ...] | None, int]] | None = None,
                        meta: dict[str, Any] | None = None) -> OpGraph:
    """Convert a GraphDef dict (either parser) to an ``OpGraph``.

    ``shapes`` maps node name → (first output shape, dtype bytes) from TensorFlow's shape
    inference; missing nodes fall back to attrs.
    """
    shapes = shapes or {}
    library = _func_library(gd)
    nodes: list[OpNode] = []
    edges: list[tuple[int, int]] = []
    info: list[tuple[dict[str, Any], list[int], tuple[int, ...] | None]] = []

    def add_scope(node_defs: list[dict], prefix: str, depth: int, call_idx: int | None) -> None:
        index: dict[str, int] = {}
        pending: list[tuple[int, list[str]]] = []
        for nd in node_defs:
            nname, op = str(_get(nd, "name", "")), str(_get(nd, "op", ""))
            attrs = _attrs(nd)
            full = prefix + nname
            if full in shapes:
                shape, dbytes = shapes[full]
            else:
                shape, dbytes = _attr_shape(op, attrs), _dtype_bytes(attrs)
            idx = len(nodes)
            # gpuscope's own GraphDef export records class and phase (gpuscope.graphs.files)
            klass = _get(attrs.get("_gpuscope_op_class", {}), "s") or tf_op_class(op)
            phase = _get(attrs.get("_gpuscope_phase", {}), "s") or tf_phase(full, op)
            nodes.append(OpNode(
                name=full, op=op, op_class=_b2s(klass), shape=shape if shape is not None else (),
                numel=_numel(shape), dtype_bytes=dbytes, phase=_b2s(phase),
            ))
            info.append((attrs, [], shape))
            index[nname] = idx
            pending.append((idx, [str(i) for i in _getlist(nd, "input")]))
        for idx, inputs in pending:
            srcs_seen: set[int] = set()
            for inp in inputs:
                src = index.get(inp.lstrip("^").split(":")[0])
                if src is not None:
                    if src not in srcs_seen:  # one edge per producer (MatMul(a, a))
                        edges.append((src, idx))
                        srcs_seen.add(src)
                    if not inp.startswith("^"):
                        info[idx][1].append(src)
            if call_idx is not None and not srcs_seen:
                edges.append((call_idx, idx))  # a function body hangs off its call node
        for idx, _ in pending:
            if depth >= _MAX_DEPTH:
                continue
            for key in _FUNC_ATTRS:
                v = info[idx][0].get(key)
                funcs = [_get(v, "func")] + _getlist(_get(v, "list", {}), "func") if v else []
                for fn in funcs:
                    fname = _get(fn, "name") if fn else None
                    if fname and str(fname) in library:
                        body = _getlist(library[str(fname)], "node_def")
                        add_scope(body, f"{nodes[idx].name}/{fname}/", depth + 1, idx)

    add_scope(_getlist(gd, "node"), "", 0, None)
    for i, (attrs, srcs, shape) in enumerate(info):
        n = nodes[i]
        in_shapes = [info[s][2] for s in srcs]
        n.flops = tf_flops(n.op, shape, in_shapes, attrs)
        in_bytes = sum(nodes[s].out_bytes for s in srcs)
        n.bytes_accessed = float(in_bytes + n.out_bytes)
        # values recorded by gpuscope's own GraphDef export win over the estimates
        if "_gpuscope_dtype_bytes" in attrs:
            n.dtype_bytes = int(_get(attrs["_gpuscope_dtype_bytes"], "i", n.dtype_bytes))
        for key in ("flops", "bytes_accessed"):
            if f"_gpuscope_{key}" in attrs:
                setattr(n, key, float(_get(attrs[f"_gpuscope_{key}"], "f", 0.0)))
    g_meta = {"framework": "tensorflow", **(meta or {})}
    return OpGraph(name=name, nodes=nodes, edges=edges, meta=g_meta)
