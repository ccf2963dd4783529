pytest_plugins = ["fixtures.pytest_plugin"]
