"""Coverage-guided fuzzing (atheris / libFuzzer) of a driver's model and request validation.

* :mod:`fuzz.decoder` — fuzz bytes to a test model in the corpus schema (plus HAL tweaks
  and an output buffer plan): literal models, or models drafted from the operation table
  (:mod:`runtime.ops.generation`) with a hostility setting; and the encoder from corpus
  models to seed inputs;
* :mod:`fuzz.request` — the HAL request (input pool, output buffers) of a decoded model;
* :mod:`fuzz.target` — one iteration: the HAL path and the front-end path on the driver,
  checked against the reference validator (the *full* target), or model validation only
  (the fast *validation* target, ``--target validation``);
* :mod:`fuzz.findings` — what counts as a finding, and how it is stored as a replayable
  corpus model (``<findings>/V_FUZZ/*.json.gz``, run by ``pytest cts/ --corpus <findings>``);
* ``python -m fuzz`` (:mod:`fuzz.__main__`) — the command line;
* ``python -m fuzz.host_target`` (:mod:`fuzz.host_target`) — the driver host's local
  transport (frame reader and dispatch) fed arbitrary client byte streams and descriptors.

Importing this package imports nothing else (the fuzzer instruments the runtime before it
is imported).
"""
