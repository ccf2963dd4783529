"""Benchmarks: scripts that print figures, never tests (bench app; imports the platform only)."""
