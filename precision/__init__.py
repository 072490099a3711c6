"""Exhaustive and stratified precision sweeps (``nncts precision``; docs/precision.md): each
unary element-wise operation of the table over every float16 input, every 8-bit quantized
input and a stratified float32 sample, batched into one execution per sweep on the driver
under test and judged element by element against the float64 truth (AOSP's tolerance the
verdict, the operation's error budget a grade).

Modules: :mod:`~precision.cases` (the cases, read off the operation table, and their
inputs), :mod:`~precision.ranges` (the input range cut into bins: where the error lives),
:mod:`~precision.measure` (model, run, truth, judgement, record), :mod:`~precision.plugin`
(pytest option ``--sweep`` and the items), ``test_sweeps.py`` (the test), ``__main__``
(``python -m precision``: replay chosen inputs). The page is :mod:`reports.precision`.
"""
