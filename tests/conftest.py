"""Collection rules for the kit's own tests (ring: test tooling).

Every test carries exactly the layer marker of what it needs (``unit``, ``integration``,
``conformance``, ``chaos``, ``reports``): the tox envs and CI select by marker, so an unmarked
test would silently never run in ``tox -e unit`` or ``tox -e integration``. Collection fails and
names the unmarked tests.
"""

from __future__ import annotations

import pytest

LAYERS = ("unit", "integration", "conformance", "chaos", "reports")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = [item.nodeid for item in items if not any(item.get_closest_marker(layer) for layer in LAYERS)]
    if unmarked:
        raise pytest.UsageError(
            f"{len(unmarked)} test(s) carry no layer marker ({', '.join(LAYERS)}); mark them:\n  "
            + "\n  ".join(unmarked)
        )
