"""The NNAPI front end in Pythonic form: :class:`Model`, :class:`Compilation`,
:class:`Execution`, :class:`Memory`, :class:`Device`."""
from .compilation import Compilation
from .device import Device, get_devices, get_supported_operations_for_devices
from .execution import Execution, get_default_loop_timeout, get_maximum_loop_timeout
from .memory import Memory
from .model import Model, OperandDesc

__all__ = ["Compilation", "Device", "Execution", "Memory", "Model", "OperandDesc", "get_devices",
           "get_supported_operations_for_devices", "get_default_loop_timeout", "get_maximum_loop_timeout"]
