"""The memo of validate_model verdicts (runtime.hal.validation_memo) never answers for a
model whose content differs from the one validated, and its key covers every field of the
HAL model classes. Expected verdicts are the HAL rules themselves (hand-written cases)."""
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from runtime.errors import HalError
from runtime.hal import types as hal_types
from runtime.hal import validation_memo
from runtime.hal.memory import SharedMemory
from runtime.hal.validate import validate_model
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.test_model import load_spec
from runtime.types import OperandLifeTime as L, OperandType as T

CORPUS = Path(__file__).resolve().parents[1] / "cts" / "corpus"


@pytest.fixture
def add_model():
    validation_memo.clear()
    (tm,) = [t for t in load_spec(CORPUS / "V1_0" / "add.json.gz") if t.name == "add"]
    return to_hal_model(tm)


def test_key_reads_every_field_of_the_hal_model_classes():
    for name, keyed in validation_memo.KEYED_FIELDS.items():
        fields = {f.name for f in dataclasses.fields(getattr(hal_types, name))}
        assert fields == set(keyed), f"{name}: key misses {fields - set(keyed)}"


def test_model_changed_in_place_after_validation_is_validated_again(add_model):
    validate_model(add_model)
    validate_model(add_model)  # a repeat: answered from the memo
    add_model.main.operands[0].type = 99
    with pytest.raises(HalError, match="not a valid OperandType"):
        validate_model(add_model)
    add_model.main.operands[0].type = T.TENSOR_FLOAT32
    validate_model(add_model)


def test_a_remembered_rejection_keeps_its_message(add_model):
    add_model.main.operands[0].number_of_consumers = 3
    messages = []
    for _ in range(2):
        with pytest.raises(HalError) as e:
            validate_model(add_model)
        messages.append(e.value.message)
    assert messages[0] == messages[1] and "numberOfConsumers is 3" in messages[0]


def test_values_equal_in_python_but_of_another_type_get_their_own_verdict(add_model):
    add_model.main.operands[0].dimensions = [2]
    validate_model(add_model)
    add_model.main.operands[0].dimensions = [2.0]  # 2.0 == 2 in Python, but not a uint32
    with pytest.raises(HalError, match="must be uint32 values"):
        validate_model(add_model)


def test_constant_pool_contents_are_part_of_the_key(add_model):
    """ADD's fused activation is read from a constant at validation: the same structure
    with another value in the pool is another model (7 is no FuseCode)."""
    operation = add_model.main.operations[0]
    activation = add_model.main.operands[operation.inputs[2]]
    pool = SharedMemory(data=np.int32(0).tobytes())
    activation.lifetime = L.CONSTANT_REFERENCE
    activation.location = hal_types.DataLocation(len(add_model.pools), 0, 4)
    add_model.pools.append(pool)
    validate_model(add_model)
    pool.buffer[:4] = np.int32(7).tobytes()
    with pytest.raises(HalError, match="fused activation 7 is not a FuseCode"):
        validate_model(add_model)


def test_unserializable_content_is_validated_every_time(add_model):
    class Odd:  # cannot be pickled (a local class)
        pass
    add_model.main.operands[0].extra_params = Odd()
    assert validation_memo.model_key(add_model, 8) is None
    for _ in range(2):
        with pytest.raises(HalError, match="extraParams of type Odd"):
            validate_model(add_model)
