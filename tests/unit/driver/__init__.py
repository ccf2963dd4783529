"""Unit tests of the controller drivers (pure parts)."""
