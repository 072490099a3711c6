"""Value domains of the operation table's parameter slots, by the slot's Arg name: what a
scalar (or axis tensor) slot may hold. The coverage matrix enumerates them
(:mod:`cts.coverage.axes`), random graphs sample them (:mod:`runtime.ops.generation`).
"""
from __future__ import annotations

#: Enumerated scalar slots by Arg name: (label, value) pairs. NNAPI FuseCode (0-3);
#: PaddingCode; the layout flag; BOX_WITH_NMS_LIMIT's kernels; MIRROR_PAD's modes;
#: LSHProjectionType; INT32 flags (keep_dims of MEAN, time_major of
#: UNIDIRECTIONAL_SEQUENCE_RNN: non-zero = true).
DOMAINS: dict[str, tuple[tuple[str, object], ...]] = {
    "activation": (("NONE", 0), ("RELU", 1), ("RELU1", 2), ("RELU6", 3)),
    "padding_scheme": (("SAME", 1), ("VALID", 2)),
    "layout": (("NHWC", False), ("NCHW", True)),
    "nms_kernel": (("hard", 0), ("linear", 1), ("gaussian", 2)),
    "mode": (("REFLECT", 0), ("SYMMETRIC", 1)),
    "type": (("SPARSE_DEPRECATED", 1), ("DENSE", 2), ("SPARSE", 3)),
    "keep_dims": (("false", 0), ("true", 1)),
    "time_major": (("false", 0), ("true", 1)),
}
#: Values beyond a domain that some operations accept (LSTM's activation: TANH, SIGMOID).
EXTRA_VALUES = {"activation": (("TANH", 4), ("SIGMOID", 6))}
#: Axis slots (scalar or 1-D tensor of axes): each lies in [-rank, rank) of input 0.
AXIS_NAMES = ("axis", "axes")
