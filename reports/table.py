"""The report's collected tables (:class:`Table`: name, schema, rows) and their JSON-able cells
(reports, decisions ring: shared by the page renderer and the file writers).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from pyspark.sql import Row
from pyspark.sql import types as T  # noqa: N812 - PySpark convention

__all__ = ["Table", "plain"]


@dataclass(frozen=True)
class Table:
    name: str
    schema: T.StructType
    rows: list[Row]

    @property
    def columns(self) -> list[str]:
        return self.schema.fieldNames()

    def dicts(self) -> list[dict[str, Any]]:
        return [{c: plain(r[c]) for c in self.columns} for r in self.rows]


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def plain(value: Any) -> Any:
    """A JSON-able value: rows → dicts, timestamps → ISO-8601 UTC."""
    if isinstance(value, Row):
        return {k: plain(v) for k, v in value.asDict().items()}
    if isinstance(value, datetime):
        return _iso(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value
