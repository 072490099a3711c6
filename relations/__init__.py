"""nncts metamorphic relations: properties of a driver's outputs that need no golden value
(batch split and concatenation, NHWC / NCHW twins, partitioning, permutations of
element-wise inputs, repeated executions, relaxed float32 against float16), run over the
corpus and random graphs on any driver (``nncts relations --driver NAME``). A relation
applies to a model when the reference executor satisfies it; the driver must then satisfy
it within the relation's stated tolerance (:mod:`relations.catalog`). A failure is
minimized (:mod:`harness.minimize`) and written as a replayable model."""
