"""Developer tools for the reference runtime."""
