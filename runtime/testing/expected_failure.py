"""What a test model that must fail (``expect_failure``) must see, by stage and code; the CTS
(:mod:`harness.runner`) and the VTS (:mod:`vts.test_generated_hal`) judge by it.

Two kinds, derived from the model (the corpus has 61 such models, all AOSP's):

* **endless loop** (AOSP ``TestModel::isInfiniteLoopTimeoutTest``: ``expectFailure`` and a
  WHILE as the main subgraph's first operation; ``while_infinite_loop``): a valid model
  whose loop never ends. The driver must run it and end the execution with
  MISSED_DEADLINE_TRANSIENT or MISSED_DEADLINE_PERSISTENT once the loop timeout passes.
  AOSP accepts both: VTS ``GeneratedTestHarness.cpp`` (``OutputType::MISSED_DEADLINE``:
  ``executionStatus == MISSED_DEADLINE_TRANSIENT || ... == MISSED_DEADLINE_PERSISTENT``,
  hardware/interfaces neuralnetworks/aidl/vts/functional) and CTS ``TestControlFlow.cpp``
  (``ControlFlowTest.InfiniteLoop...``: ``result == Result::MISSED_DEADLINE_TRANSIENT ||
  result == Result::MISSED_DEADLINE_PERSISTENT``, packages/modules/NeuralNetworks
  runtime/test), both with a loop timeout of 1 ms (:data:`ENDLESS_LOOP_TIMEOUT_NS`).
* **invalid model** (every other: ``depthwise_conv2d_invalid_filter_dims``,
  ``strided_slice_invalid``, ``cast_mismatching_shapes``, ``if_no_value``,
  ``concat_invalid_rank``, ``conv2d_v1_3_invalid_rank``): the driver must reject it before
  anything runs, with INVALID_ARGUMENT from ``get_supported_operations`` or
  ``prepare_model`` (HAL ``IDevice``: INVALID_ARGUMENT "if the model is invalid"). Through the
  front end that is BAD_DATA from ``getSupportedOperationsForDevices`` or
  ``Compilation.finish`` (the runtime maps INVALID_ARGUMENT to BAD_DATA, and a driver's
  exception to OP_FAILED: neither a crash, nor OP_FAILED / GENERAL_FAILURE, nor a failing
  execution is the rejection due).

What is not judged here: a driver that declines an operation (``get_supported_operations``
False) makes the test not applicable, and a model the front end rejects before the driver sees
it leaves nothing of the driver to judge (the suites record both as skips).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..types import RESULT_CODE_OF_ERROR_STATUS, ErrorStatus, OperationType, ResultCode
from .test_model import TestModel

#: Stages of a test, by the HAL call that makes them.
SUPPORT, PREPARE, EXECUTION = "get_supported_operations", "prepare_model", "execution"
#: The front-end call of each stage (what a CTS message names).
FRONT_END_CALL = {SUPPORT: "getSupportedOperationsForDevices", PREPARE: "Compilation.finish",
                  EXECUTION: "the execution"}
#: Loop timeout of an endless-loop model's executions (AOSP VTS and CTS: 1 ms).
ENDLESS_LOOP_TIMEOUT_NS = 1_000_000


@dataclass(frozen=True)
class ExpectedFailure:
    """The failure due: ``kind`` (``invalid model`` / ``endless loop``), the ``stages`` it may
    come at (of :data:`SUPPORT`, :data:`PREPARE`, :data:`EXECUTION`) and the HAL
    ``statuses`` it may have (front-end codes: :attr:`codes`)."""

    kind: str
    stages: tuple[str, ...]
    statuses: tuple[ErrorStatus, ...]

    @property
    def codes(self) -> tuple[ResultCode, ...]:
        """The front-end result codes of :attr:`statuses`."""
        return tuple(RESULT_CODE_OF_ERROR_STATUS[s] for s in self.statuses)

    @property
    def loop_timeout_ns(self) -> int | None:
        """The loop timeout to execute with: :data:`ENDLESS_LOOP_TIMEOUT_NS` for an endless
        loop, else None (the default)."""
        return ENDLESS_LOOP_TIMEOUT_NS if self.kind == "endless loop" else None

    def describe(self, front_end: bool = False) -> str:
        """E.g. ``"INVALID_ARGUMENT from get_supported_operations or prepare_model (an invalid
        model)"``; ``front_end``: the codes and calls of the front end, e.g. ``"BAD_DATA
        (the driver's INVALID_ARGUMENT) from getSupportedOperationsForDevices or
        Compilation.finish (an invalid model)"``."""
        if front_end:
            codes = " or ".join(f"{c.name} (the driver's {s.name})" if c.name != s.name else c.name
                                for c, s in zip(self.codes, self.statuses))
            stages = " or ".join(FRONT_END_CALL[s] for s in self.stages)
        else:
            codes = " or ".join(s.name for s in self.statuses)
            stages = " or ".join(self.stages)
        return f"{codes} from {stages} ({'an' if self.kind[0] in 'aeiou' else 'a'} {self.kind})"

    def judge(self, stage: str, code: ErrorStatus | ResultCode) -> str | None:
        """None when a failure with ``code`` (an ErrorStatus at the HAL, a ResultCode through
        the front end) at ``stage`` is the failure due; else the problem, naming the stage and
        code seen and those due, e.g. ``"expected BAD_DATA (the driver's INVALID_ARGUMENT) from
        getSupportedOperationsForDevices or Compilation.finish (an invalid model); got OP_FAILED
        from the execution"``."""
        front_end = isinstance(code, ResultCode)
        if stage in self.stages and code in (self.codes if front_end else self.statuses):
            return None
        where = FRONT_END_CALL[stage] if front_end else stage
        return f"expected {self.describe(front_end)}; got {code.name} from {where}"

    def every_step_succeeded(self, front_end: bool = False) -> str:
        """The problem when nothing failed."""
        calls = [FRONT_END_CALL[s] if front_end else s for s in (SUPPORT, PREPARE, EXECUTION)]
        return (f"expected {self.describe(front_end)}; but every step succeeded ({', '.join(calls[:2])} "
                f"and {calls[2]})")


INVALID_MODEL = ExpectedFailure("invalid model", (SUPPORT, PREPARE), (ErrorStatus.INVALID_ARGUMENT,))
#: A valid model whose execution fails (a fuzz finding the reference executor cannot run,
#: ``expected_failure: "execution failure"``): INVALID_ARGUMENT before anything runs, or a
#: failing execution (GENERAL_FAILURE or INVALID_ARGUMENT); never success, never a crash.
EXECUTION_FAILURE = ExpectedFailure("execution failure", (SUPPORT, PREPARE, EXECUTION),
                                    (ErrorStatus.INVALID_ARGUMENT, ErrorStatus.GENERAL_FAILURE))
ENDLESS_LOOP = ExpectedFailure("endless loop", (EXECUTION,),
                               (ErrorStatus.MISSED_DEADLINE_TRANSIENT, ErrorStatus.MISSED_DEADLINE_PERSISTENT))


def is_endless_loop(tm: TestModel) -> bool:
    """AOSP ``isInfiniteLoopTimeoutTest``: ``expect_failure`` and the main subgraph's first
    operation is a WHILE."""
    return bool(tm.expect_failure and tm.main.operations and tm.main.operations[0].type == OperationType.WHILE)


def expected_failure(tm: TestModel) -> ExpectedFailure | None:
    """The failure ``tm`` must see (:data:`ENDLESS_LOOP` or :data:`INVALID_MODEL`), or None
    when it is not an ``expect_failure`` model."""
    if not tm.expect_failure:
        return None
    if getattr(tm, "expected_failure", "") == "execution failure":
        return EXECUTION_FAILURE
    return ENDLESS_LOOP if is_endless_loop(tm) else INVALID_MODEL
