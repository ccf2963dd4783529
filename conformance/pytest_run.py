"""How the kit starts pytest on the suite: the plugins it needs, named, and no others (conformance ring).

With plugin autoloading, pytest marks every module of every distribution that declares a
``pytest11`` entry point for assertion rewriting. The kit declares one (``kzk-harness``), so each
pytest process — the main one and every xdist worker — would parse and rewrite all of the kit's
modules it imports, about 190, and where ``PYTHONDONTWRITEBYTECODE`` is set it can never cache
them: about a second per process before the first check. Loading the plugins by name instead
rewrites only the checks, their conftests and the named plugin module, as pytest does for any
project; the checks' assertion messages are unchanged.
"""

from __future__ import annotations

__all__ = ["PLUGINS", "plugin_args", "plugin_env"]

#: xdist (``-n``), allure (``--alluredir``), the harness's fixtures and hooks (``zk_server`` …)
PLUGINS = ("xdist.plugin", "allure_pytest.plugin", "harness.pytest_plugin")


def plugin_args() -> list[str]:
    """``-p NAME`` for each of :data:`PLUGINS`."""
    return [arg for name in PLUGINS for arg in ("-p", name)]


def plugin_env() -> dict[str, str]:
    """The environment entry that turns autoloading off (xdist's workers inherit it)."""
    return {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
