"""Providers and the facts they carry: trees, resource classes, traits,
aggregates, partitions."""
