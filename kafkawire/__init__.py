"""The Kafka wire layer shared by the reference node, its controller channel and the probes (ring:
wire — used by drivers and probes alike).

- `framing`: size-prefixed frames, request/response headers, version-tolerant kio builders,
  decoding (importing it installs `compat`, kio 0.5.0's tagged-field fix, in the process).
- `errors`: Kafka's error codes as the `Errors` enum.
- `states`: `TopicPartition` (the kit's one definition: the reference, the probes and the chaos
  checkers use it) and `LeaderAndIsrPartitionState`, the one partition state both sides of a
  LeaderAndIsr request use.

It is a top-level package because both `reference_controller` and `probes` use it and the
probes may not import the reference. It imports neither (a wall in `tests/architecture`).
"""
