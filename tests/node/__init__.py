"""Tests of the reference broker node (issue 4)."""
