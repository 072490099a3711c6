"""The coverage matrix (``nncts coverage``, issue 9): for every operation of the operation
table, the cells of the coverage axes (:mod:`.axes`), which of them the vendored corpus
covers, which only our specs (``cts/specs/built``, test ids ``SPECS/...``) cover, which stay
empty and which the specification rules out (:mod:`.scan`); rendered as a text table, JSON
and HTML (:mod:`.report`).
"""
