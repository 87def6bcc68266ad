"""Consumer groups and their affinity policies."""
