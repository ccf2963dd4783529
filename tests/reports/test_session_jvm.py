"""The report job's JVM: which garbage collector it runs (a real Spark session)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

pytestmark = pytest.mark.reports


def test_the_driver_jvm_runs_the_parallel_collector(spark: SparkSession) -> None:
    """The job asks for the throughput collector; the running JVM's own collector beans say
    which one it got (G1 would name "G1 Young Generation" / "G1 Old Generation")."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    beans = jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    names = sorted(str(beans.get(i).getName()) for i in range(beans.size()))
    assert names == ["PS MarkSweep", "PS Scavenge"], names
