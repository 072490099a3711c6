"""Random valid graphs drawn from the operation table, run on a driver and on the reference,
compared with AOSP's aggregate criteria; failing graphs are minimized and written as
replayable test models (see docs/suites/random-graphs.md).

Modules: :mod:`~harness.graphs` (drawing graphs), :mod:`~harness.graph_configs`
(AOSP's configurations and criteria sets), :mod:`~random_graph.run` (driver alone and
partitioned), :mod:`~random_graph.minimize` (delta debugging), :mod:`~random_graph.reproducer`
(corpus-schema files), :mod:`~random_graph.plugin` (pytest options and items).
"""
