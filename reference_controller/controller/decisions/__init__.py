"""Decisions ring of the controller: pure functions and data, no I/O — states, elections, reassignment
phases, deletion eligibility, ISR changes, broker membership, rebalance."""
