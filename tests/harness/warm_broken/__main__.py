"""Fails at import, warm or cold."""

raise ImportError("warm_broken cannot be imported")
