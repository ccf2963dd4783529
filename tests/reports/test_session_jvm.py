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


def test_the_driver_jvm_compiles_less(spark: SparkSession) -> None:
    """The job's JIT settings reach the running JVM (read back from HotSpot itself, with where
    each value came from): C2 thresholds at 3x and smaller inlining limits than the defaults
    (1.0, 325 and 2500 bytes on JDK 17)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    bean_class = jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
    bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(bean_class)
    got = {}
    for name in ("CompileThresholdScaling", "FreqInlineSize", "InlineSmallCode"):
        option = bean.getVMOption(name)
        got[name] = (str(option.getValue()), str(option.getOrigin()))
    assert got == {
        "CompileThresholdScaling": ("3.0", "VM_CREATION"),
        "FreqInlineSize": ("100", "VM_CREATION"),
        "InlineSmallCode": ("1000", "VM_CREATION"),
    }, got
