"""External events from compute-like agents."""
