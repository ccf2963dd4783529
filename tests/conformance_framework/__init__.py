"""Unit tests of the conformance framework (catalogue, targets, records, parsers, proxy)."""
