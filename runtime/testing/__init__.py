"""Test-model support shared by every suite: the corpus loader, HAL conversion and the
NNAPI accuracy criteria."""
