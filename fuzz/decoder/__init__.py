"""Structure-aware decoding of fuzz input bytes into a test model (corpus schema,
:class:`runtime.testing.test_model.TestModel`) plus HAL-level tweaks and a request plan, and
the encoder that maps a corpus model back to bytes (seeds).

Modules: :mod:`~fuzz.decoder.common` (byte reader and writer, limits, hostile values,
schema fitting), :mod:`~fuzz.decoder.literal` (literal mode), :mod:`~fuzz.decoder.generator`
with :mod:`~fuzz.decoder.byterng` and :mod:`~fuzz.decoder.flow` (generated mode),
:mod:`~fuzz.decoder.tweaks` (HAL tweaks), :mod:`~fuzz.decoder.codec` (:func:`decode`,
:func:`encode`, :func:`model_difference`). The names below are importable from
``fuzz.decoder`` itself.

Decoding is total: any byte string decodes (a short input reads as zeros once exhausted,
like atheris' ``FuzzedDataProvider``), and the result always obeys the corpus schema, so
it can be written as a corpus JSON model and loaded back. The only "rejection" is
:class:`Rejected`, raised for an empty input.

Byte format
===========

Integers: ``u8``; ``u32`` little-endian; ``varint`` is unsigned LEB128 (at most 10 bytes,
masked to 64 bits); ``zigzag`` is a varint holding a signed value (``0, -1, 1, -2, ...``);
``f32`` is 4 little-endian bytes of a binary32 (any bits, NaN and infinities included).
Reading past the end yields zero bytes; in literal mode a list (operands, operations,
index lists) also ends early once the input is exhausted.

Byte 0 is the header:

====  ======================================================================================
bit   meaning
====  ======================================================================================
0     mode: 0 = *literal* graph (what the encoder writes), 1 = *generated* graph
1     ``is_relaxed`` (relaxComputationFloat32toFloat16)
2     literal mode: every operand carries an explicit ``number_of_consumers`` varint
      (otherwise it is counted from the operations, as in every corpus model)
3     a HAL tweak section follows the graph
4-5   generated mode: hostility level 0..3 (how often a drafted value escapes to a hostile
      one: never, 1/256, 1/16, 1/4 of the time)
6-7   output buffer plan: 0-1 exact size (declared size; ``UNKNOWN_OUTPUT_BYTES`` for an
      output whose dimensions are not fully specified), 2 one byte short, 3 generous
      (declared size + 64 bytes; the front end then enables input/output padding)
====  ======================================================================================

Literal graph (mode 0)::

    varint  number of operands (at most MAX_OPERANDS)
    per operand:
      u8      type: OperandType code (byte % 16; 15 is SUBGRAPH)
      u8      rank: byte < 0x80 -> byte % 9; else byte - 0x80 (0..127, absurd ranks)
      varint  each dimension (uint32: value & 0xFFFFFFFF)
      f32     scale
      zigzag  zero point
      u8      lifetime = (byte & 0x7F) % 7 (OperandLifeTime code); bit 7: is_ignored.
              A SUBGRAPH lifetime makes the type SUBGRAPH (whatever the type byte said)
              and, after the data is read, the dimensions [] (a uint32 scalar)
      varint  number_of_consumers (only with header bit 2)
      TENSOR_QUANT8_SYMM_PER_CHANNEL only: u8 channel_dim, varint n (<= 1024), n x f32 scales
      lifetimes SUBGRAPH_INPUT, SUBGRAPH_OUTPUT, CONSTANT_COPY, CONSTANT_REFERENCE, SUBGRAPH:
      u8      data kind (byte % 4): 0 null; 1 raw: varint n then n bytes (little-endian
              elements); 2 fill: u32 seed, values from a hash of (seed, index);
              3 constant: one u8 repeated
    varint  number of operations (at most MAX_OPERATIONS)
    per operation:
      u8      type: byte < 106 -> that OperationType code; else an operation of the
              operation table (runtime.ops.REGISTRY, in code order), (byte - 106) % size
      varint  number of inputs (<= MAX_IO), then a varint operand index each
      varint  number of outputs (<= MAX_IO), then a varint operand index each
    varint  number of model inputs (<= MAX_IO), then a varint operand index each
    varint  number of model outputs (<= MAX_IO), then a varint operand index each
    varint  number of referenced subgraphs (<= MAX_REFERENCED; an exhausted input has none),
            then each in the same layout as the main graph above (operands ... outputs);
            a referenced subgraph's inputs and outputs keep no data (corpus schema)

Data are fitted to the schema: when the dimensions are fully specified the element count
must be their product, so the values are cut or zero-padded to it (or dropped, ``null``,
when the product exceeds ``MAX_ELEMENTS``); a tensor of unknown rank (no dimensions) keeps
one value, as a scalar; otherwise they stay flat; an empty array is ``null``. A SUBGRAPH
operand always holds one uint32. Indexes are kept even when out of range (the validators
must reject them).

Generated graph (mode 1): a short chain of operations of the operation table, each drafted
the way random graphs are (:mod:`runtime.ops.generation`: the table's defaults, then the
row's ``generate`` hook), with bytes in place of random numbers
(:class:`~fuzz.decoder.byterng.ByteRng`: a scalar draw reads 1, 2 or 4 bytes, an array draw
comes from a numpy Generator seeded by 4 bytes the first time one is needed), biased toward
models that pass validation (:mod:`fuzz.decoder.generator`)::

    u8      number of operations: 1 + byte % 4
    per operation:
      u8      operation: an entry of REGISTRY (byte % size); with hostility, an escape
              picks any OperationType code instead (often one the table lacks)
      u8      signature of that operation (byte % count); variadic: u8 repeat count
      u8      largest dimension of the draft: 2 + byte % 5
      u8      input 0: an earlier operand of its type and an allowed rank to start from
              (byte % 4 != 0 and one exists), else a fresh draft
      ...     the draft's own draws (shapes, parameters by Arg name from
              runtime.ops.domains, axes in [-rank, rank) or [0, rank) for nonnegative_axis
              rows, quantizations with the slots' fixed_quant, the hook's constraints)
      per input: u8 escape (see hostility); then an omitted slot: u8 NO_VALUE (bit 7) or
              a model input without value; a parameter: u8 lifetime (constant, now and then
              a model input); a data slot: u8 link to an earlier operand of the same shape
              and quantization, else u8 lifetime and u8 value kind (the slot's range, or
              raw input bytes)
      per output: u8 declared dimensions (the shape the operation table's ``prepare``
              infers, or all unknown, or unknown rank); quantized: u8 escape and u8
              quantization (the slot's fixed_quant or the hook's, else input 0's or fresh)
    Outputs no later operation reads become model outputs; every new SUBGRAPH_INPUT is a
    model input in creation order.

Hostility (header bits 4-5, or ``decode(..., hostility=)``): the chance in 256 that an
escape byte fires (HOSTILITY_LEVELS: 0, 1, 16, 64). A fired escape pushes that value out
of its domain: an out-of-domain scalar or axis (:func:`runtime.ops.generation.outside_domain`)
or hostile integer / float, a broken parameter tensor, an absurd rank or dimension, a
hostile scale or zero point, a near miss of a fixed quantization, wrong per-channel
parameters, a hostile float among the data, a required input omitted, a link to an operand
of another shape. An IF or WHILE (a row with referenced subgraphs and no hook) is built
with its subgraphs instead of a draft (:mod:`fuzz.decoder.flow`).

HAL tweak section (header bit 3), at most MAX_TWEAKS records, each::

    u8      kind (byte % len(TWEAK_KINDS))
    varint  target index (taken modulo the number of targets when applied)
    u8      field selector
    u8      value selector: < 0x80 -> HOSTILE_INTS[byte % len]; else a zigzag varint follows

A tweak is applied to the HAL model and request after ``to_hal_model`` (see
:func:`apply_tweaks`, :mod:`fuzz.decoder.tweaks`): it reaches what the corpus schema cannot
say (locations, negative dimensions, raw enum codes, pool sizes). Tweaks do not change the test model; a finding
records them as metadata.
"""
from __future__ import annotations

from .codec import FuzzCase, decode, encode, model_difference
from .common import (DATA_LIFETIMES, HOSTILE_DIMS, HOSTILE_FLOATS, HOSTILE_INTS, MAX_ELEMENTS, MAX_IO,
                     MAX_OPERANDS, MAX_OPERATIONS, MAX_RAW_BYTES, MAX_REFERENCED, MAX_SCALES,
                     N_OPERATION_CODES, SCALES, UNKNOWN_OUTPUT_BYTES, ByteReader, ByteWriter, Rejected,
                     fill_values)
from .generator import DRAFT_MAX_ELEMENTS, HOSTILITY_LEVELS
from .tweaks import MAX_TWEAKS, TWEAK_KINDS, Tweak, apply_tweaks

__all__ = ["DATA_LIFETIMES", "DRAFT_MAX_ELEMENTS", "HOSTILE_DIMS", "HOSTILE_FLOATS", "HOSTILE_INTS",
           "HOSTILITY_LEVELS", "MAX_ELEMENTS", "MAX_IO", "MAX_OPERANDS", "MAX_OPERATIONS", "MAX_RAW_BYTES",
           "MAX_REFERENCED", "MAX_SCALES", "MAX_TWEAKS", "N_OPERATION_CODES", "SCALES", "TWEAK_KINDS",
           "UNKNOWN_OUTPUT_BYTES", "ByteReader", "ByteWriter", "FuzzCase", "Rejected", "Tweak",
           "apply_tweaks", "decode", "encode", "fill_values", "model_difference"]
