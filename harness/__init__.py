"""The harness: what every suite stands on, below the suites and above the runtime.

The pytest plugin core (:mod:`.plugin`: ``--driver``, ``--corpus``, outcome records), the
record hook spec (:mod:`.hookspecs`), records and their vocabulary (:mod:`.records`),
baselines (:mod:`.expectations`), profiles (:mod:`.requirements`), ``--shard`` (:mod:`.sharding`),
progress lines (:mod:`.progress`), the driver under test read once per run (:mod:`.driver`),
bindings and poison (:mod:`.binding`), changed inputs (:mod:`.changed_inputs`), execution
modes (:mod:`.modes`), the CTS's model runner (:mod:`.runner`), the random-graph generator
(:mod:`.graphs`, :mod:`.graph_configs`), the suite table (:mod:`.suites`) and the one
locator of the project root and the corpus (:mod:`.locations`).

Floors (``pyproject.toml``'s import-linter contracts): the harness imports only the
runtime; suites import the harness and the runtime, never each other.
"""
