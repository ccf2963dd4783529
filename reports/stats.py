"""Statistics of the flakiness report as plain functions (reports, decisions ring).

The Spark transforms compute the same quantities as column expressions; these are the
definitions (and the one Spark lacks: the normal tail for the two-proportion test).

- Wilson score interval (95 %: z = 1.959963984540054) for k failures in n executions::

      centre = (p + z²/2n) / (1 + z²/n),  half = z/(1 + z²/n) · sqrt(p(1-p)/n + z²/4n²)

- runs needed to see a flake of rate r with confidence c: the least n with
  (1 - r)^n ≤ 1 - c, i.e. ceil(ln(1 - c) / ln(1 - r)); r = 1 %, c = 95 % → 299.
- two-proportion z-test (pooled), one-sided: is the current failure rate above the baseline's?
- binary entropy in bits of a failure rate.
"""

from __future__ import annotations

import math

__all__ = ["Z95", "binary_entropy", "runs_needed", "two_proportion_p", "wilson"]

Z95 = 1.959963984540054


def wilson(failures: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of ``failures / n`` (``n > 0``)."""
    p = failures / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def runs_needed(flake_rate: float, confidence: float) -> int:
    """Executions without a failure after which a flake of ``flake_rate`` is ruled out."""
    return math.ceil(math.log(1 - confidence) / math.log(1 - flake_rate))


def two_proportion_p(base_failures: int, base_n: int, cur_failures: int, cur_n: int) -> float | None:
    """One-sided p-value of "current failure rate > baseline rate" (pooled z-test).

    ``None`` when either window has no executions; 1.0 when the pooled rate is 0 or 1 (no
    difference is possible).
    """
    if base_n <= 0 or cur_n <= 0:
        return None
    pooled = (base_failures + cur_failures) / (base_n + cur_n)
    if pooled in (0.0, 1.0):
        return 1.0
    se = math.sqrt(pooled * (1 - pooled) * (1 / base_n + 1 / cur_n))
    z = (cur_failures / cur_n - base_failures / base_n) / se
    return 0.5 * math.erfc(z / math.sqrt(2))


def binary_entropy(rate: float) -> float:
    """Shannon entropy (bits) of pass/fail with failure probability ``rate``."""
    if rate in (0.0, 1.0):
        return 0.0
    return -(rate * math.log2(rate) + (1 - rate) * math.log2(1 - rate))
