"""The random-graph suite: each item draws graph (configuration, seed), runs it on the
driver under test alone and partitioned across the sample variants, judges it with AOSP's
aggregate criteria (plus nncts's quantized mean-error bound), and on failure writes the graph
and its minimized reproducer (:mod:`random_graph.minimize`) for ``pytest cts/ --corpus``."""
import pytest

from harness.graph_configs import criteria_for
from harness.graphs import GenerationError, generate
from harness.plugin import add_record_fields
from random_graph.judge import record_fields
from random_graph.minimize import minimize, size_of
from random_graph.reproducer import write_reproducer
from random_graph.run import run_graph


def test_random_graph(random_graph_case, nncts_device, request):
    config, seed = random_graph_case
    try:
        tm = generate(config, seed, criteria_for(config).name)
    except GenerationError as e:
        add_record_fields(request.node, operations=list(config.only and [o.name for o in config.only] or []))
        pytest.fail(f"generator: {e}", pytrace=False)
    add_record_fields(request.node, operations=[t.name for t in tm.operation_types], feature_level=tm.feature_level)
    outcome = run_graph(tm, nncts_device)
    add_record_fields(request.node, **record_fields(outcome))
    if outcome.status == "skipped":
        add_record_fields(request.node, skip_kind=outcome.skip_kind)
        pytest.skip(outcome.message)
    if outcome.status == "passed":
        return
    dump = request.config.getoption("graph_dump")
    found = {"graph": str(write_reproducer(tm, dump)), "graph_size": size_of(tm)}
    if not request.config.getoption("no_minimize"):
        def still_fails(candidate):
            return run_graph(candidate, nncts_device, three_way=False).kind == outcome.kind

        small = minimize(tm, still_fails)
        found.update(minimized=str(write_reproducer(small, dump, "-minimized")), minimized_size=size_of(small))
    add_record_fields(request.node, reproducers=found)
    where = "; ".join(f"{k}: {v}" for k, v in found.items())
    pytest.fail(f"{request.node.callspec.id}: {outcome.message}\n{where}\nreplay: pytest cts/ --corpus {dump} "
                f"--driver {request.config.getoption('driver')}", pytrace=False)
