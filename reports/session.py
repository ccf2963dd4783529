"""The Spark session of the reports job and the explanation of its failures (reports, drivers ring).

- ``check_java``: Spark 4 needs a Java 17+ runtime; without one the message names the fix.
- ``check_master``: a ``spark://`` master that refuses connections is reported at once (Spark
  itself retries for about a minute, then gives up with "All masters are unresponsive").
- ``start``: ``local[*]`` unless ``--master`` (or ``spark-submit --master``) says otherwise;
  Spark's own failure to start (a bad master URL, YARN without ``HADOOP_CONF_DIR`` …) is
  explained in one line by :func:`explain`.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Final

from reports.errors import EnvironmentProblem

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["auto_driver_memory", "check_java", "check_master", "explain", "jvm_cpu_s", "start"]

_JAVA_FIX = (
    "install a Java 17+ runtime (Debian: apt-get install -y openjdk-17-jre-headless, or "
    "bash scripts/setup_reports.sh) or set JAVA_HOME to one"
)
# Spark's own log is off but for fatal errors (KZK_REPORTS_SPARK_LOG=warn|info|… to see it):
# failures reach the user as one explained line (:func:`explain`), not as log4j stack traces.
_LOG4J = """\
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark %p %c{1}: %m%n
"""


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home, "bin", "java")
        return str(candidate) if candidate.is_file() else None
    return shutil.which("java")


def check_java() -> None:
    """Raise :class:`EnvironmentProblem` unless a Java 17+ runtime is there."""
    java = _java()
    if java is None:
        where = (
            f"JAVA_HOME={os.environ['JAVA_HOME']} has no bin/java"
            if "JAVA_HOME" in os.environ
            else ("no java on PATH")
        )
        raise EnvironmentProblem(f"no Java runtime ({where}); Spark needs Java 17+: {_JAVA_FIX}")
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise EnvironmentProblem(f"{java} does not run ({exc}): {_JAVA_FIX}") from exc
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    major = int(m.group(1)) if m else 0
    major = int(m.group(2) or 0) if m and major == 1 else major
    if major < 17:
        raise EnvironmentProblem(f"{java} is Java {major or '?'}; Spark 4 needs Java 17+: {_JAVA_FIX}")


def check_master(master: str | None, timeout_s: float = 5.0) -> None:
    """A ``spark://host:port[,host:port]`` master must accept a TCP connection."""
    if not master or not master.startswith("spark://"):
        return
    problems: list[str] = []
    for hostport in master.removeprefix("spark://").split(","):
        host, _, port = hostport.rpartition(":")
        try:
            with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
                return
        except (OSError, ValueError) as exc:
            problems.append(f"{hostport}: {exc.strerror if isinstance(exc, OSError) else exc}")
    raise EnvironmentProblem(
        f"Spark master {master} cannot be reached ({'; '.join(problems)}): start the master or fix "
        "--master (Spark would retry for ~60 s, then fail with 'All masters are unresponsive')"
    )


def _loopback(master: str | None) -> bool:
    """Local mode, or a ``spark://`` master whose every host is a loopback name."""
    if not master or master.startswith("local"):
        return True
    if not master.startswith("spark://"):
        return False
    hosts = [hp.rpartition(":")[0] for hp in master.removeprefix("spark://").split(",")]
    return all(h in ("127.0.0.1", "localhost", "[::1]") for h in hosts)


@contextmanager
def _jvm_stderr(into: Path) -> Iterator[None]:
    """While the JVM is launched, fd 2 goes to ``into``: the launcher's stack traces and warnings
    stay out of the terminal (the JVM keeps that file as its stderr), and a failure can quote them."""
    if os.environ.get("KZK_REPORTS_SPARK_LOG"):  # the user wants to see Spark's log
        yield
        return
    saved = os.dup(2)
    with into.open("wb") as fh:
        os.dup2(fh.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _launcher_error(log: Path) -> str | None:
    """The launcher's own message, e.g. ``SparkException: Master must either be yarn or …``."""
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    for line in text.splitlines():
        m = re.search(r"(\w+(?:Exception|Error)): (.+)", line)
        if m and not line.startswith("WARNING"):
            return f"{m.group(1)}: {m.group(2)}"[:400]
    return None


def explain(exc: BaseException) -> str:
    """The first line that says what went wrong, from a Py4J / PySpark / Spark error."""
    java = getattr(exc, "java_exception", None)
    text = str(java.toString()) if java is not None else str(exc)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "Exception" in ln or "Error" in ln or ln.startswith("["):
            return ln[:400]
    return (lines[0] if lines else type(exc).__name__)[:400]


def _scratch() -> Path:
    """The driver's scratch directory (Spark's ``spark.local.dir`` and the JVM's temporary files,
    e.g. the native libraries it unpacks): inside this process's run root, so it goes when the
    process ends and the reaper removes it after a killed one (Spark's own clean-up runs only on an
    orderly JVM exit, and left ``/tmp/spark-*`` and ``/tmp/liblz4-java-*`` behind)."""
    global _SCRATCH
    if _SCRATCH is None or not _SCRATCH.is_dir():
        from harness.process import install_cleanup_hooks, new_run_dir  # noqa: PLC0415

        install_cleanup_hooks()
        _SCRATCH = new_run_dir("spark-driver")
    return _SCRATCH


_SCRATCH: Path | None = None


def auto_driver_memory() -> str:
    """A quarter of the machine's RAM, at least 1 GiB and at most 8 GiB (the job caches the
    parsed records; the rest of the machine keeps the other three quarters)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return "3g"
    return f"{max(1, min(8, total // 4 // 2**30))}g"


# The job's JVM options (driver and executors), both for a short batch job on a small machine
# (figures side by side in reports/README.md):
# - the throughput collector: G1's concurrent marking and remembered sets cost CPU the job
#   needs (1M-record report: 0.87 of G1's wall time, 0.86 of its JVM CPU);
# - a JIT compiler that works less: a run of a few minutes spends a large share of its CPU in
#   C2 compiling (~50 CPU-s of ~210 in a 1M-record build, most of it in compilations of over
#   100 ms each: Spark's generated classes, Janino, Jackson). Methods reach C2 at 3x the usual
#   call counts, and C2 inlines smaller callees, so fewer and smaller compilations compete with
#   the tasks for the two cores. Results do not depend on it; only speed does.
_JVM_OPTIONS: Final = (
    "-XX:+UseParallelGC",
    "-XX:CompileThresholdScaling=3",
    "-XX:FreqInlineSize=100",
    "-XX:InlineSmallCode=1000",
)
_JVM: Final = " ".join(_JVM_OPTIONS)


def start(
    master: str | None = None,
    *,
    app_name: str = "kzk-reports",
    driver_memory: str = "auto",
    shuffle_partitions: int = 8,
) -> SparkSession:
    """A Spark session for the job (an existing one, e.g. from ``spark-submit``, is reused)."""
    try:
        from pyspark.sql import SparkSession  # noqa: PLC0415 - only here: a clear message without it
    except ImportError as exc:
        raise EnvironmentProblem(
            "pyspark is not installed: pip install -e '.[reports]' (or bash scripts/setup_reports.sh)"
        ) from exc
    check_java()
    check_master(master)
    scratch = _scratch()
    java_tmp = f"-Djava.io.tmpdir={scratch}"
    with tempfile.TemporaryDirectory(prefix="kzk-reports-") as tmp:
        log4j = Path(tmp, "log4j2.properties")
        log4j.write_text(
            _LOG4J.replace("{level}", os.environ.get("KZK_REPORTS_SPARK_LOG", "fatal")), encoding="utf-8"
        )
        builder = (
            SparkSession.builder.appName(app_name)
            .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            # PySpark otherwise records the Python call site of every column and DataFrame
            # operation in the JVM (five extra gateway calls each, for error messages): the
            # job builds thousands of them, and planning is serial driver time (parse and
            # table plans: ~4 s less per build). Spark's own errors still name the operation.
            .config("spark.python.sql.dataFrameDebugging.enabled", "false")
            .config("spark.driver.memory", auto_driver_memory() if driver_memory == "auto" else driver_memory)
            .config(
                "spark.driver.extraJavaOptions",
                f"-Dlog4j2.configurationFile=file:{log4j} {java_tmp} {_JVM}",
            )
            .config("spark.executor.extraJavaOptions", _JVM)
            .config("spark.local.dir", str(scratch))
        )
        if _loopback(master):
            # Loopback only, unless the driver must be reachable from a cluster's executors
            # elsewhere (a standalone master on this machine's loopback has its executors here).
            builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config(
                "spark.driver.host", "127.0.0.1"
            )
        if master:
            builder = builder.master(master)
        jvm_log = Path(tmp, "jvm-stderr.log")
        try:
            with _jvm_stderr(jvm_log):
                spark = builder.getOrCreate()
        except Exception as exc:
            where = master or os.environ.get("MASTER") or "local[*]"
            why = _launcher_error(jvm_log) or explain(exc)
            raise EnvironmentProblem(f"Spark could not start with master {where}: {why}") from exc
    spark.sparkContext.setLogLevel(os.environ.get("KZK_REPORTS_SPARK_LOG", "fatal").upper())
    return spark


def jvm_cpu_s(spark: SparkSession) -> float | None:
    """CPU seconds the driver JVM has used (in local mode: the executors too); None if the JVM
    does not say. Logged next to wall times: on a shared machine wall time is mostly load."""
    try:
        jvm = spark.sparkContext._jvm
        info = jvm.java.lang.ProcessHandle.current().info().totalCpuDuration()  # type: ignore[union-attr]
        return float(info.get().toNanos()) / 1e9 if info.isPresent() else None
    except Exception:
        return None
