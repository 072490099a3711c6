"""The relations suite: each item checks one metamorphic relation (:mod:`relations.catalog`)
on one source model on the driver under test. Not applicable (the reference does not
satisfy the relation on the model) is a skip; a driver that breaks it fails, and the model
is minimized (:mod:`harness.minimize`: the smallest graph on which the relation still
fails) and written, whole and minimized, as replayable models under ``--relations-dump``."""
import pytest

from harness.graphs import GenerationError
from harness.minimize import minimize, size_of
from harness.plugin import add_record_fields
from relations.catalog import evaluate
from relations.reproducer import write_reproducer
from relations.running import Runner


def test_relation(relation_case, nncts_device, request):
    relation, source = relation_case
    try:
        tm = source.load()
    except GenerationError as e:
        pytest.fail(f"generator: {e}", pytrace=False)
    if source.corpus_model is None:
        add_record_fields(request.node, operations=[t.name for t in tm.operation_types],
                          feature_level=tm.feature_level)
    verdict = evaluate(relation, tm, Runner(nncts_device))
    if verdict.status in ("not_applicable", "skipped"):
        add_record_fields(request.node, skip_kind=verdict.skip_kind or "relation_not_applicable")
        pytest.skip(f"{'not applicable: ' if verdict.status == 'not_applicable' else ''}{verdict.message}")
    if verdict.status == "passed":
        return
    dump = request.config.getoption("relations_dump")
    found = {"model": str(write_reproducer(tm, relation.name, dump)), "model_size": size_of(tm)}
    small = minimize(tm, lambda c: evaluate(relation, c, Runner(nncts_device)).status == "failed")
    found.update(minimized=str(write_reproducer(small, relation.name, dump, "-minimized")),
                 minimized_size=size_of(small))
    add_record_fields(request.node, reproducers=found)
    where = "; ".join(f"{k}: {v}" for k, v in found.items())
    pytest.fail(f"relation {relation.name} ({relation.statement}; tolerance: {relation.tolerance}) broken: "
                f"{verdict.message}\n{where}\nreplay: nncts relations --relation {relation.name} --corpus {dump} "
                f"--driver {request.config.getoption('driver')}", pytrace=False)
