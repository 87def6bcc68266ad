"""Placement's database as a source and allocworker's as its target: the
import, its catch-up and compare scopes."""
