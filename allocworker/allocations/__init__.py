"""Consumers and their allocations: writes, reads, usages, the capacity
rule and the reshaper."""
