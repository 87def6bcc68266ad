"""Consumers and their allocations: the allocation transaction's writes,
idempotency keys, and the books read whole (audit, gauges)."""
