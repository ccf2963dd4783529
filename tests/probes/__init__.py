"""probes package."""
