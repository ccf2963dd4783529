"""Kafka 2.5.1's quirks as data: the registry and its recognisers (decisions ring, pure).

See :mod:`chaos.checkers.quirks.registry`; ``python -m chaos quirks`` lists them.
"""

from chaos.checkers.quirks.registry import QUIRKS, Quirk, Recognition, markdown_table

__all__ = ["QUIRKS", "Quirk", "Recognition", "markdown_table"]
