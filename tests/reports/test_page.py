"""Pieces of the page on hand-made tables: the failure-rate trend's axis when every run passed."""

from __future__ import annotations

import re
from datetime import date

import pytest
from pyspark.sql import Row
from pyspark.sql import types as T  # noqa: N812 - PySpark convention

from reports import page, svg
from reports.table import Table

pytestmark = pytest.mark.unit

_TREND = T.StructType([T.StructField(n, t) for n, t in (
    ("kind", T.StringType()), ("target", T.StringType()), ("day", T.DateType()),
    ("executed", T.LongType()), ("failures", T.LongType()), ("failure_rate", T.DoubleType()),
)])  # fmt: skip


def _y_labels(svg_text: str) -> list[str]:
    """The y-axis tick labels (right-aligned texts left of the plot)."""
    return re.findall(r'<text x="56" y="[0-9.]+" text-anchor="end"[^>]*>([^<]+)</text>', svg_text)


def test_a_failure_trend_where_every_run_passed_has_a_0_to_1_percent_axis() -> None:
    rows = [Row(kind="conformance-test", target="reference", day=date(2026, 1, d), executed=10, failures=0,
                failure_rate=0.0) for d in (1, 2, 3)]  # fmt: skip
    html = page._trend_section({"failure_trend": Table("failure_trend", _TREND, rows)})
    assert _y_labels(html) == ["0", "0.2", "0.4", "0.6", "0.8", "1"]
    assert "e-" not in "".join(_y_labels(html))


def test_a_failure_trend_with_failures_scales_to_them() -> None:
    # 0 % and 40 %: the top is 40 · 1.05 = 42, ticks every 10
    text = svg.lines(series={"s": [(1.0, 0.0), (2.0, 40.0)]}, title="t", x_label=str, y_min_top=1.0)
    assert _y_labels(text) == ["0", "10", "20", "30", "40"]


def test_lines_of_zeros_without_a_minimum_top_still_span_one_unit() -> None:
    text = svg.lines(series={"s": [(1.0, 0.0), (2.0, 0.0)]}, title="t", x_label=str)
    assert _y_labels(text) == ["0", "0.2", "0.4", "0.6", "0.8", "1"]
