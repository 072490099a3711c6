"""Deliberately broken drivers: each is the sample driver with one planted fault, used to
prove that the CTS catches it (tests/test_cts_catches_faults.py)."""
from __future__ import annotations

import dataclasses

import numpy as np

from runtime import ops
from runtime.drivers.sample import SampleDevice
from runtime.errors import HalError
from runtime.executor import execute
from runtime.ops.common import is_quant
from runtime.types import ErrorStatus, OperationType


class _PatchedDevice(SampleDevice):
    """Sample driver whose kernel for ``operation`` is wrapped by ``patch(ctx, execute)``."""

    operation: OperationType

    def patch(self, ctx, kernel):
        raise NotImplementedError

    def run(self, model, request):
        table = dict(ops.REGISTRY)
        original = table[self.operation]
        table[self.operation] = dataclasses.replace(
            original, execute=lambda ctx: self.patch(ctx, original.execute))
        return execute(model, request, table)


class OffByTwoQuantaAdd(_PatchedDevice):
    """ADD's quantized results are ``quanta`` (2) quanta too high, saturating at 255; float
    results unchanged. NNAPI's quant8 tolerance is 1 quantum, so 2 must be caught."""

    operation = OperationType.ADD
    quanta = 2

    def patch(self, ctx, kernel):
        out = kernel(ctx)
        if is_quant(ctx.outputs[0]):
            return [np.clip(out[0].astype(np.int64) + self.quanta, 0, 255).astype(out[0].dtype)]
        return out


class OffByOneQuantumAdd(OffByTwoQuantaAdd):
    """ADD's quantized results one quantum too high: within NNAPI's quant8 tolerance, so
    the CTS must still pass it (checks the tolerance is not stricter than NNAPI's)."""

    quanta = 1


class DropsFusedActivation(SampleDevice):
    """Ignores the fused activation (computes as FuseCode NONE) of every operation that
    has one; at feature levels 1-2 it is always the operation's last input."""

    FUSED = (OperationType.ADD, OperationType.MUL, OperationType.SUB, OperationType.DIV,
             OperationType.CONV_2D, OperationType.DEPTHWISE_CONV_2D, OperationType.FULLY_CONNECTED,
             OperationType.AVERAGE_POOL_2D, OperationType.MAX_POOL_2D, OperationType.L2_POOL_2D)

    def run(self, model, request):
        table = dict(ops.REGISTRY)
        for op in self.FUSED:  # in shape inference too: a kernel may keep what prepare read
            table[op] = dataclasses.replace(table[op], prepare=self._without_activation(table[op].prepare),
                                            execute=self._without_activation(table[op].execute))
        return execute(model, request, table)

    @staticmethod
    def _without_activation(kernel):
        def run(ctx):
            ctx.inputs[-1].value = np.asarray(0, np.int32)
            return kernel(ctx)
        return run


class CacheAcceptsCorruption(SampleDevice):
    """Prepares from a compilation cache without checking its token or digests (and without
    validating the model it decodes), so a corrupted or foreign cache yields a wrong or broken
    prepared model. NNAPI requires the driver to detect a corrupted model cache
    (source.android.com "Compilation caching", Security); the CTS caching mode must catch it."""

    def prepare_model_from_cache(self, deadline_ns, model_cache, data_cache, token):
        from runtime.drivers import sample_cache
        from runtime.drivers.sample import SamplePreparedModel
        from runtime.hal.types import Model, Subgraph
        try:
            model = sample_cache.load(model_cache, data_cache, token, verify=False)
        except HalError:
            model = Model(Subgraph())  # undecodable garbage loaded as an empty model
        return SamplePreparedModel(model, self)


class TimingNotMeasured(SampleDevice):
    """Never measures timing, even when asked (durations stay UINT64_MAX)."""

    def prepare_model(self, *args, **kwargs):
        from runtime.hal.interfaces import IPreparedModel
        from runtime.hal.types import Timing
        inner = super().prepare_model(*args, **kwargs)

        class Prepared(IPreparedModel):
            def execute_synchronously(self, request, measure=None, deadline_ns=None, loop_timeout_duration_ns=None):
                shapes, _ = inner.execute_synchronously(request, measure, deadline_ns, loop_timeout_duration_ns)
                return shapes, Timing()
        return Prepared()


class LostAsyncCallback(SampleDevice):
    """Starts asynchronous executions but never notifies their callback."""

    def prepare_model(self, *args, **kwargs):
        inner = super().prepare_model(*args, **kwargs)

        class Prepared(type(inner)):
            def execute_asynchronously(self, request, measure, deadline_ns, loop_timeout_duration_ns, callback):
                return None  # the callback is lost
        prepared = Prepared.__new__(Prepared)
        prepared.__dict__.update(inner.__dict__)
        return prepared


class WrongOutputShape(SampleDevice):
    """Computes correctly but reports every output's first dimension one too large."""

    def run(self, model, request):
        from runtime.hal.types import OutputShape
        shapes = super().run(model, request)
        return [OutputShape([s.dimensions[0] + 1, *s.dimensions[1:]] if s.dimensions else s.dimensions,
                            s.is_sufficient) for s in shapes]


class LaxConsumersDriver(SampleDevice):
    """Recomputes every operand's numberOfConsumers from the operations (counting the inputs
    that refer to an existing operand) before validating, so it accepts a model whose counts
    are wrong. The HAL (1.0-1.3 ``Operand.numberOfConsumers``) makes such a model invalid:
    the VTS ``number_of_consumers`` mutants must catch it, and nothing else may change (every
    other kind of mutant is still rejected)."""

    @staticmethod
    def _recounted(model):
        from vts.mutations import clone_model, count_consumers
        model = clone_model(model)
        for sg in [model.main, *model.referenced]:
            for operand, n in zip(sg.operands, count_consumers(sg)):
                operand.number_of_consumers = n
        return model

    def get_supported_operations(self, model):
        return super().get_supported_operations(self._recounted(model))

    def prepare_model(self, model, *args, **kwargs):
        return super().prepare_model(self._recounted(model), *args, **kwargs)


class LaxScaleDriver(SampleDevice):
    """Validates a copy of the model whose quantized operands (asymmetric and symmetric
    8/16-bit, not per-channel) have their scale replaced by 1.0 when it is not finite and
    positive, and their zeroPoint clamped into the type's range: it accepts models NNAPI
    makes invalid (scale <= 0 or NaN, zeroPoint out of range). The fuzzer's differential
    check against the reference validator must catch it (tests/test_fuzz.py)."""

    @staticmethod
    def _repaired(model):
        import copy
        import math
        from runtime.types import OperandType as T
        ranges = {T.TENSOR_QUANT8_ASYMM: (0, 255), T.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
                  T.TENSOR_QUANT8_SYMM: (0, 0), T.TENSOR_QUANT16_ASYMM: (0, 65535),
                  T.TENSOR_QUANT16_SYMM: (0, 0)}
        model = copy.deepcopy(model)
        for sg in [model.main, *model.referenced]:
            for operand in sg.operands:
                if operand.type in ranges:
                    if not (math.isfinite(operand.scale) and operand.scale > 0):
                        operand.scale = 1.0
                    lo, hi = ranges[operand.type]
                    operand.zero_point = min(max(operand.zero_point, lo), hi)
        return model

    def get_supported_operations(self, model):
        return super().get_supported_operations(self._repaired(model))

    def _check_preparable(self, model):
        super()._check_preparable(self._repaired(model))


class _ArgumentOverride(SampleDevice):
    """Sample driver that runs chosen operations with some scalar inputs forced to a value
    (in shape inference and kernel alike), found by the slot names of the operation table's
    matching signature: ``slots`` maps a slot name to the value it is forced to."""

    slots: dict = {}

    def run(self, model, request):
        table = dict(ops.REGISTRY)
        for op_type, opdef in ops.REGISTRY.items():
            if any(a.name in self.slots for s in opdef.signatures for a in s.inputs):
                table[op_type] = dataclasses.replace(opdef, prepare=self._forced(opdef, opdef.prepare),
                                                     execute=self._forced(opdef, opdef.execute))
        return execute(model, request, table)

    def _forced(self, opdef, step):
        def run(ctx):
            sig = opdef.match(ctx.inputs, ctx.outputs)
            for j, arg in enumerate(sig.inputs if sig else ()):
                if arg.name in self.slots and not ctx.inputs[j].omitted:
                    ctx.inputs[j].value = np.asarray(self.slots[arg.name], ctx.inputs[j].value.dtype)
            return step(ctx)
        return run


class IgnoresLayout(_ArgumentOverride):
    """Treats every NCHW tensor as NHWC: the FL3 ``layout`` flag of every operation that has
    one (convolutions, poolings, resizes, ROI operations, ...) is read as false."""

    slots = {"layout": False}


class IgnoresDilation(_ArgumentOverride):
    """Runs CONV_2D and DEPTHWISE_CONV_2D as if their FL3 dilation factors were 1."""

    slots = {"dilation_width": 1, "dilation_height": 1}


class TrustsReferencedSubgraphs(SampleDevice):
    """Validates the main subgraph only: the referenced subgraphs (IF/WHILE branches,
    conditions and bodies) are trusted. It validates a copy of the model in which each
    referenced subgraph keeps its interface (its input and output operands, which the IF
    and WHILE rules of main compare with main's operands) but its contents are one opaque
    extension operation reading the inputs and writing the outputs, so no rule of the
    contents (operand fields, lifetimes, numberOfConsumers, execution order, writers,
    operation types and signatures) is checked; it decides support and prepares on the
    model itself. The HAL rules hold in every subgraph (HAL 1.3 ``Model.referenced``, AOSP
    ``validateModel`` validating each subgraph): the VTS mutants of referenced subgraphs
    (vts/mutations/) must catch it, and it must pass every mutant of main."""

    EXTENSION = "nncts.test.trusted_subgraph"

    def _trusted(self, model):
        from runtime.extension_types import make_extension_type
        from runtime.hal.types import ExtensionNameAndPrefix, Model
        prefix = 1 + max((int(e.prefix) for e in model.extension_name_to_prefix), default=0)
        trusted = Model(model.main, [self._stand_in(sg, make_extension_type(prefix, 0))
                                     for sg in model.referenced],
                        model.operand_values, model.pools, model.relax_computation_float32_to_float16,
                        [*model.extension_name_to_prefix, ExtensionNameAndPrefix(self.EXTENSION, prefix)])
        trusted.untrusted = model  # support is decided on the model itself (see supports)
        return trusted

    @staticmethod
    def _stand_in(sg, operation_type):
        """``sg``'s interface around one ``operation_type`` operation (``sg`` itself when an
        input or output index is out of range: no interface to keep)."""
        from runtime.hal.types import DataLocation, Operation, Subgraph
        from runtime.types import OperandLifeTime as L
        if any(not 0 <= i < len(sg.operands) for i in (*sg.input_indexes, *sg.output_indexes)):
            return sg
        ins = [dataclasses.replace(sg.operands[i], lifetime=L.SUBGRAPH_INPUT, number_of_consumers=1,
                                   location=DataLocation()) for i in sg.input_indexes]
        outs = [dataclasses.replace(sg.operands[i], lifetime=L.SUBGRAPH_OUTPUT, number_of_consumers=0,
                                    location=DataLocation()) for i in sg.output_indexes]
        n = len(ins)
        io = (list(range(n)), list(range(n, n + len(outs))))
        return Subgraph(ins + outs, [Operation(operation_type, *io)], *io)

    def supports(self, model, operation, *args, **kwargs):
        return super().supports(getattr(model, "untrusted", model), operation, *args, **kwargs)

    def get_supported_operations(self, model):
        return super().get_supported_operations(self._trusted(model))

    def _check_preparable(self, model):
        super()._check_preparable(self._trusted(model))


class FusesRelu6AsRelu(_PatchedDevice):
    """CONV_2D computes a fused RELU6 as RELU: no upper clamp at 6 (the ``activation`` slot
    of the matching signature read as 1 when it is 3). No AOSP corpus CONV_2D model fuses
    RELU6, so only our own specs (cts/specs/conv.py) can catch it."""

    operation = OperationType.CONV_2D

    def run(self, model, request):
        table = dict(ops.REGISTRY)
        original = table[self.operation]  # in shape inference too: the kernel keeps what prepare read
        table[self.operation] = dataclasses.replace(
            original, prepare=lambda ctx: self.patch(ctx, original.prepare),
            execute=lambda ctx: self.patch(ctx, original.execute))
        return execute(model, request, table)

    def patch(self, ctx, kernel):
        sig = ops.REGISTRY[self.operation].match(ctx.inputs, ctx.outputs)
        j = [a.name for a in sig.inputs].index("activation")
        if int(ctx.inputs[j].value) == 3:  # FuseCode RELU6
            ctx.inputs[j].value = np.asarray(1, np.int32)  # RELU
        return kernel(ctx)


class QuantConvOneHigh(_PatchedDevice):
    """Every quantized CONV_2D output one quantum too high (saturating at the type's
    maximum): inside every per-element tolerance and inside AOSP's random-graph bias bound
    for convolutions (1.5 quanta); only nncts's mean-error bound
    (``criteria.QUANT_MEAN_ERROR_BOUND``) catches it."""

    operation = OperationType.CONV_2D

    def patch(self, ctx, kernel):
        out = kernel(ctx)
        if is_quant(ctx.outputs[0]):
            info = np.iinfo(out[0].dtype)
            return [np.clip(out[0].astype(np.int64) + 1, info.min, info.max).astype(out[0].dtype)]
        return out


class BroadcastSlipAdd(_PatchedDevice):
    """ADD broadcasts by repeating the smaller operand in memory order (``numpy.resize`` to
    the output shape) instead of NNAPI's trailing-dimension broadcasting: right whenever
    only leading dimensions are broadcast ([C] against [N, H, W, C]), wrong when a size-1
    dimension sits elsewhere ([N, 1] against [N, M])."""

    operation = OperationType.ADD

    def patch(self, ctx, kernel):
        shape = np.broadcast_shapes(*(tuple(v.dims) for v in ctx.inputs[:2]))
        for view in ctx.inputs[:2]:
            if tuple(view.dims) != shape and view.value is not None:
                view.value = np.resize(view.value.reshape(-1), shape)
                view.dims = shape
        return kernel(ctx)


class NeverWritesOutputs(SampleDevice):
    """Reports success with the right output shapes but never writes an output byte (the
    outputs are computed into a copy of the request)."""

    name = "nncts-never-writes"

    def run(self, model, request):
        import copy
        return super().run(model, copy.deepcopy(request))


class ReplaysFirstResults(SampleDevice):
    """Each prepared model computes its first execution, then replays that execution's
    output bytes and shapes for every later one, whatever its inputs (on every path: sync,
    async, fenced, burst and reusable executions all reach :meth:`run`): stale state."""

    name = "nncts-replays-first"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._first: dict[int, tuple[list[bytes], list]] = {}

    def run(self, model, request):
        import weakref
        first = self._first.get(id(model))
        if first is None:
            shapes = super().run(model, request)
            self._first[id(model)] = ([bytes(self._region(request, arg)) for arg in request.outputs], shapes)
            weakref.finalize(model, self._first.pop, id(model), None)
            return shapes
        for arg, raw in zip(request.outputs, first[0]):
            region = self._region(request, arg)
            n = min(len(raw), len(region))
            region[:n] = raw[:n]
        return first[1]

    @staticmethod
    def _region(request, arg) -> memoryview:
        pool, loc = request.pools[arg.location.pool_index], arg.location
        end = loc.offset + loc.length if loc.length else pool.size
        return pool.buffer[loc.offset:end]


# --- drivers that fail, or succeed, in the wrong way (tests/test_expect_failure.py) --------------

class DeclinesEverything(SampleDevice):
    """Supports no operation of any model, valid or not (no validation): every test is
    not applicable; none of the models that must fail may pass."""

    name = "nncts-declines-everything"

    def get_supported_operations(self, model):
        return [False] * len(model.main.operations)


class RaisesInPrepare(SampleDevice):
    """Claims every operation of any model without validating it, then crashes in
    ``prepare_model`` (ZeroDivisionError): a crash is no rejection (the runtime reports it as
    OP_FAILED), so no model that must fail passes."""

    name = "nncts-raises-in-prepare"

    def get_supported_operations(self, model):
        return [True] * len(model.main.operations)

    def prepare_model(self, *args, **kwargs):
        return 1 // 0


class _Unvalidated(SampleDevice):
    """Supports and prepares any model without validating it; executions by
    :meth:`prepared`'s execute_synchronously (every other path runs on top of it)."""

    def get_supported_operations(self, model):
        return [True] * len(model.main.operations)

    def prepare_model(self, model, *args, **kwargs):
        from runtime.hal.interfaces import IPreparedModel
        execute = self.prepared_execute

        class Prepared(IPreparedModel):
            def execute_synchronously(self, request, measure=None, deadline_ns=None, loop_timeout_duration_ns=None):
                return execute(model, request)
        return Prepared()

    def prepared_execute(self, model, request):
        raise NotImplementedError


class FailsEveryExecution(_Unvalidated):
    """Every execution (sync, async, fenced, burst, reusable) ends with GENERAL_FAILURE: not
    the INVALID_ARGUMENT at preparation an invalid model needs, nor the
    MISSED_DEADLINE_TRANSIENT an endless loop needs."""

    name = "nncts-fails-every-execution"

    def prepared_execute(self, model, request):
        raise HalError(ErrorStatus.GENERAL_FAILURE, "this driver fails every execution")


class SucceedsWithoutComputing(_Unvalidated):
    """Every execution succeeds at once, writing nothing and reporting each output's declared
    dimensions: a model that must fail sees every step succeed."""

    name = "nncts-succeeds-without-computing"

    def prepared_execute(self, model, request):
        from runtime.hal.types import OutputShape, Timing
        dims = [list(model.main.operands[i].dimensions) for i in model.main.output_indexes]
        return [OutputShape(d, True) for d in dims], Timing()


class _PreparedOverride(SampleDevice):
    """Sample driver whose prepared models are of :meth:`prepared_class` (a subclass of the
    sample's, overriding some HAL calls)."""

    def prepared_class(self, base):
        raise NotImplementedError

    def prepare_model(self, *args, **kwargs):
        inner = super().prepare_model(*args, **kwargs)
        cls = self.prepared_class(type(inner))
        prepared = cls.__new__(cls)
        prepared.__dict__.update(inner.__dict__)
        return prepared


class OffersNoBursts(_PreparedOverride):
    """``configure_execution_burst`` raises GENERAL_FAILURE: the HAL makes bursts mandatory."""

    def prepared_class(self, base):

        class Prepared(base):
            def configure_execution_burst(self):
                raise HalError(ErrorStatus.GENERAL_FAILURE, "this driver offers no bursts")
        return Prepared


class ReleaseFails(_PreparedOverride):
    """Bursts whose ``release_memory_resource`` raises GENERAL_FAILURE for every token."""

    def prepared_class(self, base):
        from runtime.hal.interfaces import IBurst

        class Burst(IBurst):
            def release_memory_resource(self, token):
                raise HalError(ErrorStatus.GENERAL_FAILURE, f"cannot release token {token}")

        class Prepared(base):
            def configure_execution_burst(self):
                return Burst(self)
        return Prepared


class OneUlpHighFloat(SampleDevice):
    """Every float32 result of SOFTMAX, CONV_2D, FULLY_CONNECTED, LOGISTIC, TANH and
    AVERAGE_POOL_2D one ULP above the reference's (``np.nextafter`` toward +inf): well
    inside every tolerance, so a correct driver in all but name. Issue 23: on main it failed
    random graph ``large-TENSOR_FLOAT32-rank2`` seed 0 (a SOFTMAX read by EQUAL), which the
    decisions of :mod:`runtime.precision.decisions` must accept."""

    OPERATIONS = (OperationType.SOFTMAX, OperationType.CONV_2D, OperationType.FULLY_CONNECTED,
                  OperationType.LOGISTIC, OperationType.TANH, OperationType.AVERAGE_POOL_2D)

    def table(self) -> dict:
        """The operation table this driver runs: the reference's, the float32 results of
        :data:`OPERATIONS` one ULP up."""
        table = dict(ops.REGISTRY)
        for op in self.OPERATIONS:
            table[op] = dataclasses.replace(table[op], execute=self._one_ulp_high(table[op].execute))
        return table

    def run(self, model, request):
        return execute(model, request, self.table())

    @staticmethod
    def _one_ulp_high(kernel):
        def run(ctx):
            return [np.nextafter(r, np.float32(np.inf)) if r.dtype == np.float32 else r
                    for r in map(np.asarray, kernel(ctx))]
        return run


class _ElementFault(_PatchedDevice):
    """Sample driver whose ``operation`` on inputs of ``dtype`` gives ``fault(x, right)``
    (per element: the input and the reference's result) instead of the reference's result;
    other types unchanged. The precision sweeps (tests/test_precision_sweeps.py) must catch
    each and say where in the input range it lives."""

    dtype = np.float32

    def fault(self, x: np.ndarray, right: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def patch(self, ctx, kernel):
        out = kernel(ctx)
        x = ctx.value(0)
        if x.dtype != self.dtype:
            return out
        with np.errstate(all="ignore"):
            return [np.asarray(self.fault(x, np.asarray(out[0])), dtype=self.dtype)]


class SinLosesAccuracyPast64(_ElementFault):
    """float32 SIN past |x| = 64 reduces its argument naively in float32 (``x - k * fl(2 pi)``,
    k = round(x / fl(2 pi))): the error grows with |x| (from ~1e-6 at 64 to the whole range
    at 2^24). Issue 23: it passes every CTS model, own spec and random graph."""

    operation = OperationType.SIN

    def fault(self, x, right):
        two_pi = np.float32(2 * np.pi)
        r = x - np.round(x / two_pi) * two_pi   # every step rounded to float32
        return np.where(np.abs(x) > 64, np.sin(r), right)


class Float16ExpOverflowsFrom10(_ElementFault):
    """float16 EXP gives +inf from x = 10 (e^10 = 22026), where the float16 range ends at
    x = ln(65504) = 11.09. Issue 23: it passes every CTS model, own spec and random graph."""

    operation = OperationType.EXP
    dtype = np.float16

    def fault(self, x, right):
        return np.where(x >= 10, np.float16(np.inf), right)


class Float16TanhSaturatesEarly(_ElementFault):
    """float16 TANH is +-1 from |x| = 2 (tanh 2 = 0.964): a clamp placed too early. Held out:
    designed apart from the sweeps' tests, which must catch it all the same."""

    operation = OperationType.TANH
    dtype = np.float16

    def fault(self, x, right):
        return np.where(np.abs(x) >= 2, np.sign(x), right)


class Float16RsqrtFlushesSubnormals(_ElementFault):
    """float16 RSQRT treats subnormal inputs as zero (denormals-are-zero): +inf for
    1/sqrt(2^-24) = 4096 ... 1/sqrt(6.1e-5) = 128, -inf for the negative ones. Held out."""

    operation = OperationType.RSQRT
    dtype = np.float16

    def fault(self, x, right):
        sub = (x != 0) & (np.abs(x) < np.float16(2.0 ** -14))
        return np.where(sub, np.copysign(np.float16(np.inf), x), right)


class LogInaccurateNearOne(_ElementFault):
    """float32 LOG of x in (0.5, 2) computed as ``log(1024 x) - log(1024)``: the subtraction
    cancels near x = 1, where the result loses ~13 bits (thousands of ULP) while its absolute
    error stays under AOSP's atol (1e-5): within the tolerance, far over any budget. Held out."""

    operation = OperationType.LOG

    def fault(self, x, right):
        near = (x > 0.5) & (x < 2)
        return np.where(near, np.log(np.float32(1024) * x) - np.log(np.float32(1024)), right)


class ThreeUlpsHighAdd(_PatchedDevice):
    """ADD's float32 results three ULP above the reference's (``np.nextafter`` toward +inf,
    three times; ``x + 0`` stays exact, as in any adder): inside AOSP's float32 tolerance
    (``1e-5 + 5 * 2^-23 * |expected|``) but over ADD's error budget (WebNN add 1 ULP: 1.5
    against the float64 truth), so the CTS passes it, grades it "over budget", and fails it
    under ``--precision strict`` (issue 23)."""

    operation = OperationType.ADD
    ulps = 3

    def patch(self, ctx, kernel):
        out = [np.asarray(r) for r in kernel(ctx)]
        if any(v.value is not None and not np.any(v.value) for v in ctx.inputs[:2]):
            return out
        for _ in range(self.ulps):
            out = [np.nextafter(r, np.float32(np.inf)) if r.dtype == np.float32 else r for r in out]
        return out


class LessAsLessEqual(_PatchedDevice):
    """LESS computes ``input0 <= input1``: wrong only where the inputs are equal, an exact
    tie between model inputs or constants, which no allowed error excuses (random graphs
    draw such ties; the decisions of ``runtime.precision.decisions`` must not hide them)."""

    operation = OperationType.LESS

    def patch(self, ctx, kernel):
        out = kernel(ctx)
        a, b = (np.asarray(v.value) for v in ctx.inputs[:2])
        if ctx.inputs[0].type == ctx.inputs[1].type and not is_quant(ctx.inputs[0]):
            return [out[0] | np.equal(a, b)]
        return out


class ReadsConstantsAtOffsetZero(SampleDevice):
    """Reads every CONSTANT_REFERENCE operand (main and referenced subgraphs) at offset 0 of
    its pool, ignoring ``DataLocation.offset``: right only for a constant that sits at the
    start of its pool. AOSP's runtime packs several constants over 128 bytes into one shared
    pool (``ModelBuilder::copyLargeValuesToSharedMemory``), so real drivers see non-zero
    offsets; nncts starts every pool with a guard (``runtime.nnapi.model.POOL_GUARD``), so
    every model with a CONSTANT_REFERENCE operand must catch it."""

    def run(self, model, request):
        from runtime.hal.types import DataLocation
        from runtime.types import OperandLifeTime as L

        def at_zero(sg):
            ops_ = [dataclasses.replace(o, location=DataLocation(o.location.pool_index, 0, o.location.length))
                    if o.lifetime == L.CONSTANT_REFERENCE else o for o in sg.operands]
            return dataclasses.replace(sg, operands=ops_)
        shifted = dataclasses.replace(model, main=at_zero(model.main),
                                      referenced=[at_zero(sg) for sg in model.referenced])
        return super().run(shifted, request)


class IgnoresFenceDependencies(_PreparedOverride):
    """``execute_fenced`` starts at once, ignoring ``wait_for``: HAL ``executeFenced`` runs
    only after every fence in ``wait_for`` signals (vts/test_device_fenced_chain.py)."""

    def prepared_class(self, base):
        class Prepared(base):
            def execute_fenced(self, request, wait_for, *args):
                return super().execute_fenced(request, [], *args)
        return Prepared


class GroupedConvBatchLeak(_PatchedDevice):
    """GROUPED_CONV_2D on TENSOR_FLOAT32 reads batch 0's image for every batch (a batch stride
    of 0) when the batch is over 1. Every float32 GROUPED_CONV_2D model of the corpus and the
    built specs has a batch of 1, so the CTS passes it; the relations' batch twins (a batch
    of 1 stacked with its reversed image) catch it (tests/test_relations.py)."""

    operation = OperationType.GROUPED_CONV_2D

    def patch(self, ctx, kernel):
        x = ctx.inputs[0]
        if x.value is not None and x.value.dtype == np.float32 and x.value.ndim == 4 and x.value.shape[0] > 1:
            x.value = np.ascontiguousarray(np.broadcast_to(x.value[:1], x.value.shape))
        return kernel(ctx)


class ResizeNchwChannelSwap(_PatchedDevice):
    """RESIZE_BILINEAR in NCHW (layout true) with three channels or more writes channels 1 and
    2 swapped. Every NCHW RESIZE_BILINEAR model of the corpus and the built specs has one or
    two channels (NHWC ones have three), so the CTS passes it; the relations' layout twins
    (the NHWC models run in NCHW) catch it (tests/test_relations.py)."""

    operation = OperationType.RESIZE_BILINEAR

    def patch(self, ctx, kernel):
        out = kernel(ctx)
        layout = ctx.inputs[3].value if len(ctx.inputs) > 3 else None
        if layout is not None and bool(np.asarray(layout).reshape(-1)[0]) and out[0].shape[1] >= 3:
            out = [np.ascontiguousarray(out[0][:, [0, 2, 1, *range(3, out[0].shape[1])]])] + list(out[1:])
        return out


class _ValueSwap(_ArgumentOverride):
    """Sample driver that runs an operation with a scalar input read as another value only
    when ``applies(ctx)``: ``swaps`` maps a slot name to (value, value read instead)."""

    operation: OperationType
    swaps: dict = {}

    def applies(self, ctx) -> bool:
        return True

    def run(self, model, request):
        table = dict(ops.REGISTRY)
        opdef = table[self.operation]
        table[self.operation] = dataclasses.replace(opdef, prepare=self._forced(opdef, opdef.prepare),
                                                    execute=self._forced(opdef, opdef.execute))
        return execute(model, request, table)

    def _forced(self, opdef, step):
        def run(ctx):
            sig = opdef.match(ctx.inputs, ctx.outputs)
            if sig is not None and self.applies(ctx):
                for j, arg in enumerate(sig.inputs):
                    view = ctx.inputs[j]
                    if arg.name in self.swaps and not view.omitted and view.value is not None \
                            and np.asarray(view.value).item() == self.swaps[arg.name][0]:
                        view.value = np.asarray(self.swaps[arg.name][1], view.value.dtype)
            return step(ctx)
        return run


class NmsLinearAsHard(_ValueSwap):
    """Runs BOX_WITH_NMS_LIMIT's linear kernel (nms_kernel 1: scores decay by 1 - IoU) as hard
    NMS (nms_kernel 0: overlapping boxes dropped); hard and gaussian untouched."""

    operation = OperationType.BOX_WITH_NMS_LIMIT
    swaps = {"nms_kernel": (1, 0)}


class BatchMatmulIgnoresAdjointsOnSquare(_ValueSwap):
    """Ignores BATCH_MATMUL's adj_x / adj_y (computes as false) when both operands' matrices
    are square (their last two dimensions equal), where the output shape gives nothing away;
    right on every other shape."""

    operation = OperationType.BATCH_MATMUL
    swaps = {"adj_x": (True, False), "adj_y": (True, False)}

    def applies(self, ctx) -> bool:
        return all(len(v.dims) >= 2 and v.dims[-1] == v.dims[-2] for v in ctx.inputs[:2])


class FailsFirstExecution(SampleDevice):
    """The first execution of the process fails (GENERAL_FAILURE); every later one is right:
    a flaky driver, for ``--retries``."""

    name = "nncts-fails-first-execution"
    executions = 0

    def run(self, model, request):
        FailsFirstExecution.executions += 1
        if FailsFirstExecution.executions == 1:
            raise HalError(ErrorStatus.GENERAL_FAILURE, "the first execution fails")
        return super().run(model, request)
