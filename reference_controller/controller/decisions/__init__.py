"""Decisions ring of the controller: pure functions and data, no I/O (states, elections, planning)."""
