"""Placeholder: filled in by the family implementation."""
