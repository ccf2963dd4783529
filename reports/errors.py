"""The one exception root of the reports package and its exit codes (reports, drivers ring)."""

from __future__ import annotations

__all__ = ["EnvironmentProblem", "InputError", "ReportsError"]


class ReportsError(Exception):
    """Root: a problem the user can act on; its message says what to do. ``exit_code`` is the
    process exit status the CLI uses."""

    exit_code = 1


class InputError(ReportsError):
    """Bad input: a missing or empty path, a record that fails the schema, bad arguments."""

    exit_code = 2


class EnvironmentProblem(ReportsError):
    """The machine cannot run the job: no JVM, no pyspark, an unreachable Spark master."""

    exit_code = 1
