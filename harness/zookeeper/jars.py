"""Finding ZooKeeper's jars and Java, and building the JVM command line (ring: drivers / test tooling).

Discovery order:

1. ``ZOOKEEPER_HOME`` (a release tarball: ``$ZOOKEEPER_HOME/lib/*.jar`` and/or ``$ZOOKEEPER_HOME/*.jar``).
   If it is set but holds no ZooKeeper jar, that is an error: an explicit setting that is wrong should
   fail loudly rather than silently fall back to another installation.
2. Debian's ``zookeeper`` package: ``/usr/share/java/zookeeper.jar`` (its manifest ``Class-Path``
   pulls in jute, netty, slf4j-api, metrics, snappy, ...). ``KZK_DEBIAN_JAVA_DIR`` overrides the
   directory (tests point it at an empty directory to hide the package).

Logging: the JVM's stdout and stderr go to ``zookeeper.log`` in the server's run dir, and the slf4j
binding is configured to log to the console, so server logs and JVM crash messages land in one file.
Debian: ``slf4j-simple`` (else ``slf4j-log4j12`` + ``log4j-1.2``). Tarball: its logback or log4j,
configured by a small file written into the run dir.

Start-up speed: besides small-heap/C1-only flags, a dynamic class-data-sharing archive (AppCDS) of
ZooKeeper's classes is written by the first JVM that exits normally and reused by later ones; it cut
the time to ``imok`` from ~0.5 s to ~0.3 s here. ``KZK_JVM_CDS=0`` turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.zookeeper.errors import (
    DEBIAN_INSTALL_HINT,
    JAVA_INSTALL_HINT,
    JavaNotFound,
    ZooKeeperNotFound,
)

DEBIAN_JAVA_DIR = Path("/usr/share/java")
LoggingKind = Literal["slf4j-simple", "logback", "log4j", "none"]

FAST_JVM_FLAGS: tuple[str, ...] = (
    "-Xms32m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.net.preferIPv4Stack=true",
    "-Djava.awt.headless=true",
)

_LOGBACK_XML = """<configuration>
  <appender name="CONSOLE" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{ISO8601} %-5level [%thread] %logger{36} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="CONSOLE"/></root>
</configuration>
"""
_LOG4J_PROPERTIES = """log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
"""


@dataclass(frozen=True)
class ZooKeeperInstall:
    """A usable ZooKeeper: the ``java`` to run it with, its classpath and how it logs."""

    java: Path
    classpath: tuple[Path, ...]
    source: str
    logging: LoggingKind

    def jvm_command(
        self,
        main_class: str,
        cfg_path: Path,
        *,
        run_dir: Path,
        heap_mb: int,
        extra_flags: Sequence[str] = (),
    ) -> list[str]:
        """The argv that runs ``main_class cfg_path`` with logging set up to the console."""
        return [
            str(self.java),
            f"-Xmx{heap_mb}m",
            *FAST_JVM_FLAGS,
            *self._logging_flags(run_dir),
            *extra_flags,
            "-cp",
            os.pathsep.join(str(p) for p in self.classpath),
            main_class,
            str(cfg_path),
        ]

    def _logging_flags(self, run_dir: Path) -> list[str]:
        if self.logging == "slf4j-simple":
            return [
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS",
                "-Dorg.slf4j.simpleLogger.logFile=System.err",
            ]
        if self.logging == "logback":
            xml = run_dir / "logback.xml"
            xml.write_text(_LOGBACK_XML)
            return [f"-Dlogback.configurationFile={xml}"]
        if self.logging == "log4j":
            props = run_dir / "log4j.properties"
            props.write_text(_LOG4J_PROPERTIES)
            return [f"-Dlog4j.configuration=file:{props}", "-Dzookeeper.root.logger=INFO,CONSOLE"]
        return []

    def version(self) -> str | None:
        """ZooKeeper's own version string (``org.apache.zookeeper.Version``), ``None`` when the JVM
        cannot tell (e.g. ``3.8.0-<commit>, built on <date>`` → ``3.8.0``)."""
        try:
            out = subprocess.run(
                [
                    str(self.java),
                    "-cp",
                    os.pathsep.join(map(str, self.classpath)),
                    "org.apache.zookeeper.Version",
                ],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        first = (out.stdout.strip().splitlines() or [""])[0]
        return first.split("-", 1)[0].split(",", 1)[0].strip() or None if out.returncode == 0 else None


_VERSION_MAIN = "org.apache.zookeeper.Version"


def find_zookeeper(
    *, zookeeper_home: str | Path | None = None, debian_java_dir: str | Path | None = None
) -> ZooKeeperInstall:
    """Locate Java and ZooKeeper's jars; raise :class:`ZooKeeperNotFound` naming the fixes if absent.

    ``zookeeper_home`` defaults to ``$ZOOKEEPER_HOME``; ``debian_java_dir`` to ``$KZK_DEBIAN_JAVA_DIR``
    or ``/usr/share/java``.
    """
    home = zookeeper_home if zookeeper_home is not None else os.environ.get("ZOOKEEPER_HOME") or None
    debian = Path(debian_java_dir or os.environ.get("KZK_DEBIAN_JAVA_DIR") or DEBIAN_JAVA_DIR)
    if home is not None:
        classpath, logging = _tarball_classpath(Path(home))
        source = f"ZOOKEEPER_HOME={home}"
    else:
        classpath, logging = _debian_classpath(debian)
        source = f"Debian package zookeeper ({debian})"
    return ZooKeeperInstall(find_java(), tuple(classpath), source, logging)


def find_java() -> Path:
    """``$JAVA_HOME/bin/java`` if set, else ``java`` on PATH; raise :class:`JavaNotFound` otherwise."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return Path(java_home) / "bin" / "java"
    found = shutil.which("java")
    if found is None:
        raise JavaNotFound(
            "no `java` on PATH and JAVA_HOME is not set: ZooKeeper needs a Java runtime. "
            f"Install one (as root: `{JAVA_INSTALL_HINT}`) or set JAVA_HOME."
        )
    return Path(found)


def _not_found(detail: str) -> ZooKeeperNotFound:
    return ZooKeeperNotFound(
        f"ZooKeeper not found: {detail}. Fix: install Debian's package as root "
        f"(`{DEBIAN_INSTALL_HINT}`, which puts zookeeper.jar in /usr/share/java), or unpack an "
        "Apache ZooKeeper 3.8 release and set ZOOKEEPER_HOME to its directory "
        "(the one holding lib/zookeeper-*.jar)."
    )


def _tarball_classpath(home: Path) -> tuple[list[Path], LoggingKind]:
    jars = sorted(home.glob("*.jar")) + sorted((home / "lib").glob("*.jar"))
    if not any(_is_zookeeper_jar(j) for j in jars):
        raise _not_found(f"ZOOKEEPER_HOME={home} holds no zookeeper-*.jar in {home}/lib or {home}")
    names = [j.name for j in jars]
    return jars, _tarball_logging(names)


def _tarball_logging(names: Iterable[str]) -> LoggingKind:
    joined = " ".join(names)
    if "logback-classic" in joined:
        return "logback"
    if "slf4j-log4j12" in joined or "slf4j-reload4j" in joined:
        return "log4j"
    if "slf4j-simple" in joined:
        return "slf4j-simple"
    return "none"


def _is_zookeeper_jar(jar: Path) -> bool:
    name = jar.name
    if name == "zookeeper.jar":
        return True
    excluded = ("jute", "tests", "sources", "javadoc", "recipes", "contrib", "-it", "prometheus")
    return name.startswith("zookeeper-") and not any(part in name for part in excluded)


def _debian_classpath(java_dir: Path) -> tuple[list[Path], LoggingKind]:
    server_jar = java_dir / "zookeeper.jar"
    if not server_jar.is_file():
        raise _not_found(f"{server_jar} does not exist and ZOOKEEPER_HOME is not set")
    classpath = [server_jar]
    jute = java_dir / "zookeeper-jute.jar"
    if jute.is_file():
        classpath.append(jute)
    if (java_dir / "slf4j-simple.jar").is_file():
        return [*classpath, java_dir / "slf4j-simple.jar"], "slf4j-simple"
    log4j = [java_dir / "slf4j-log4j12.jar", java_dir / "log4j-1.2.jar"]
    if all(p.is_file() for p in log4j):
        return [*classpath, *log4j], "log4j"
    return classpath, "none"


# --- class-data sharing -------------------------------------------------------------------------


def cache_dir() -> Path:
    """Per-user cache for the CDS archive.

    ``$KZK_CACHE_DIR``, else ``$XDG_CACHE_HOME/kzk-kit``, else ``~/.cache/kzk-kit``.
    """
    explicit = os.environ.get("KZK_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kzk-kit"


def cds_flags(install: ZooKeeperInstall, main_class: str) -> tuple[list[str], Path | None]:
    """JVM flags using (or creating) the class-data-sharing archive, and the archive to promote.

    Returns ``(flags, pending)``: when ``pending`` is not None the JVM writes a new archive there
    at exit and the caller passes it to :func:`promote_cds_archive` after the JVM has exited.
    """
    if os.environ.get("KZK_JVM_CDS", "1") == "0":
        return [], None
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return [], None
    archive = directory / f"zk-{_cds_key(install, main_class)}.jsa"
    if archive.is_file() and archive.stat().st_size > 0:
        return ["-Xshare:auto", f"-XX:SharedArchiveFile={archive}"], None
    _prune_abandoned(directory)
    pending = directory / f"{archive.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
    return ["-Xshare:auto", f"-XX:ArchiveClassesAtExit={pending}"], pending


def promote_cds_archive(pending: Path) -> None:
    """Atomically move a freshly written archive into place (a no-op if the JVM wrote none)."""
    final = pending.parent / pending.name.split(".jsa.", 1)[0]
    final = final.with_name(final.name + ".jsa")
    try:
        if pending.is_file() and pending.stat().st_size > 0:
            os.replace(pending, final)
        else:
            pending.unlink(missing_ok=True)
    except OSError:
        pending.unlink(missing_ok=True)


def _prune_abandoned(directory: Path, max_age_s: float = 3600.0) -> None:
    """Delete half-written archives of JVMs that were killed (they never reach promotion)."""
    for tmp in directory.glob("*.tmp"):
        with contextlib.suppress(OSError):
            if time.time() - tmp.stat().st_mtime > max_age_s:
                tmp.unlink()


def _cds_key(install: ZooKeeperInstall, main_class: str) -> str:
    digest = hashlib.sha256(main_class.encode())
    for path in (install.java, *install.classpath):  # the JVM checks the classpath as spelt
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]
