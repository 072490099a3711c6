"""Placeholder: operations of feature levels 4+ land here (issue 8)."""
