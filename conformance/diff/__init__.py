"""Differential conformance: the Kafka-exact reference as the oracle of generated scenarios (conformance).

A seeded generator (:mod:`~conformance.diff.generator`) turns one seed into one scenario — a
cluster shape and a sequence of steps drawn from every input a ZooKeeper-mode controller reacts
to (:mod:`~conformance.diff.steps`). The runner (:mod:`~conformance.diff.runner`) plays it on a
real cluster of a target, step by step with a quiescence barrier after each step
(:mod:`~conformance.diff.barrier`), and records everything observable from outside; the
normaliser (:mod:`~conformance.diff.normalise`) turns that into a trace with one segment per step,
masking only what Kafka 2.5.1 itself leaves open. The same scenario's trace on the reference
(cached by kit version, :mod:`~conformance.diff.cache`) is the expected one;
:mod:`~conformance.diff.compare` finds the first divergence and names the behaviour IDs behind
it, and :mod:`~conformance.diff.shrink` reduces a diverging scenario to a small repro file.
``python -m conformance diff`` is the command (:mod:`~conformance.diff.cli`).
"""
