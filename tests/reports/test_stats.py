"""The statistics' definitions, checked against numbers worked out by hand."""

from __future__ import annotations

import math

import pytest

from reports import stats

pytestmark = [pytest.mark.reports, pytest.mark.unit]

Z2 = 1.959963984540054**2  # 3.841458820694124


def test_runs_needed_to_see_a_1_percent_flake_at_95_percent_is_299() -> None:
    # 0.99^298 = 0.0501 > 0.05, 0.99^299 = 0.0496 <= 0.05
    assert 0.99**298 > 0.05 >= 0.99**299
    assert stats.runs_needed(0.01, 0.95) == 299
    assert stats.runs_needed(0.05, 0.95) == 59  # 0.95^58 = 0.0510, 0.95^59 = 0.0485


def test_wilson_interval_of_3_in_10() -> None:
    # centre = (0.3 + Z²/20) / (1 + Z²/10) = 0.492073 / 1.384146 = 0.355506
    # half = 1.959964 / 1.384146 · sqrt(0.021 + Z²/400) = 1.416009 · 0.174939 = 0.247715
    low, high = stats.wilson(3, 10)
    assert low == pytest.approx(0.1077913, abs=1e-7)
    assert high == pytest.approx(0.6032219, abs=1e-7)


def test_wilson_interval_at_the_edges() -> None:
    assert stats.wilson(0, 1) == pytest.approx((0.0, Z2 / (1 + Z2)))  # (0, 0.793451)
    assert stats.wilson(4, 4) == pytest.approx((4 / (4 + Z2), 1.0))  # (0.510109, 1)


def test_two_proportion_p_value_of_1_in_20_against_5_in_10() -> None:
    # pooled 6/30 = 0.2; se = sqrt(0.2·0.8·(1/20 + 1/10)) = 0.1549193; z = 0.45 / se = 2.904738
    # one-sided tail of the standard normal at 2.904738 = 0.0018378
    assert stats.two_proportion_p(1, 20, 5, 10) == pytest.approx(0.0018378, rel=1e-4)
    assert stats.two_proportion_p(0, 0, 5, 10) is None  # no baseline
    assert stats.two_proportion_p(0, 10, 0, 10) == 1.0  # nothing failed anywhere


def test_binary_entropy() -> None:
    # -(0.3·log2 0.3 + 0.7·log2 0.7) = 0.3·1.736966 + 0.7·0.514573 = 0.881291
    assert stats.binary_entropy(0.3) == pytest.approx(0.8812909, abs=1e-7)
    assert stats.binary_entropy(0.5) == 1.0
    assert stats.binary_entropy(0.0) == 0.0
    assert math.isclose(stats.binary_entropy(1.0), 0.0)
