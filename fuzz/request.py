"""The HAL request of a decoded test model: input data packed into one pool, one output
buffer per model output sized by the case's output plan (shared by the fuzz target, which
runs it, and the finding recorder, which replays the reference on it)."""
from __future__ import annotations

import numpy as np

from runtime.hal.memory import SharedMemory
from runtime.hal.types import DataLocation, Request, RequestArgument
from runtime.hal.validate import operand_byte_size
from runtime.testing.test_model import TestModel, TestOperand
from runtime.types import is_tensor_type, operand_dtype

from .decoder import UNKNOWN_OUTPUT_BYTES

#: Alignment (bytes) of each input's data in the input pool and of each output buffer.
ALIGN = 8
#: Output buffers never exceed this many bytes (a larger declared output gets a short buffer).
MAX_OUTPUT_BUFFER = 1 << 22


def raw_data(o: TestOperand) -> bytes:
    """The little-endian bytes of operand ``o``'s data (which must be set)."""
    return np.ascontiguousarray(o.data, operand_dtype(o.type)).tobytes()


def output_size(tm: TestModel, j: int, plan: int) -> int:
    """Bytes of the buffer for output ``j`` under output ``plan`` (0 exact, 1 one byte
    short, 2 generous)."""
    o = tm.main.operands[tm.main.output_indexes[j]] if 0 <= tm.main.output_indexes[j] < len(tm.main.operands) \
        else None
    if o is None:
        return 1
    known = (not is_tensor_type(o.type) or o.dimensions) and 0 not in o.dimensions
    need = operand_byte_size(o.type, o.dimensions) if known else UNKNOWN_OUTPUT_BYTES
    if plan == 1:
        need = need - 1 if known else 1
    elif plan == 2:
        need += 64
    return max(0, min(need, MAX_OUTPUT_BUFFER))


def build_request(tm: TestModel, plan: int) -> Request:
    """The HAL request of ``tm``: inputs' data in pool 0 (an input without data has no
    value), one buffer per output in pool 1 sized by ``plan``."""
    ins, blob = [], bytearray()
    n = len(tm.main.operands)
    for idx in tm.main.input_indexes:
        o = tm.main.operands[idx] if 0 <= idx < n else None
        if o is None or o.data is None:
            ins.append(RequestArgument(has_no_value=True))
            continue
        raw = raw_data(o)
        blob.extend(b"\0" * (-len(blob) % ALIGN))
        ins.append(RequestArgument(False, DataLocation(0, len(blob), len(raw)),
                                   list(o.data.shape) if o.data.ndim else []))
        blob.extend(raw)
    outs, offset = [], 0
    for j in range(len(tm.main.output_indexes)):
        size = output_size(tm, j, plan)
        offset += -offset % ALIGN
        outs.append(RequestArgument(False, DataLocation(1, offset, size), []))
        offset += size
    return Request(ins, outs, [SharedMemory(data=bytes(blob) or b"\0"), SharedMemory(max(offset, 1))])
