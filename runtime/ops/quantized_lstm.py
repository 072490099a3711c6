"""Placeholder: operations of feature level 3 land here (issue 7)."""
