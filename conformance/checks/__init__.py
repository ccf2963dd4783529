"""Conformance checks, one module per behaviour area."""
