"""VTS: drives a driver directly through the HAL (validation, every execution path). Filled in by issue 4."""
