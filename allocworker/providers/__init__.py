"""Providers and what they offer: inventories, resource classes, traits,
aggregates, trees, and searches over them."""
