"""MIRROR_PAD (NNAPI code 104): no AOSP corpus model tests it. Filled in when the operation
lands in the table (issue 8)."""
from __future__ import annotations


def models():
    return []
