"""A chaos campaign fanned out over a Spark cluster (ring: drivers).

``python -m chaos run --master spark://HOST:PORT --runs N --seed S`` splits the campaign into
shards (:mod:`chaos.shard`; ``--spark-shards K``, default one per 10 runs) and submits each as its
own one-task Spark job, so the executors run shards side by side and each shard's results come back
as soon as it finishes. A task runs the ordinary runner on its executor
(``python -m chaos run --shard i/K --campaign-id C …`` in a temporary directory) and returns the
shard's run records and, for runs that were kept (invalid, unknown, or all with ``--keep-all``),
their directories as compressed archives. The driver writes the records to
``<out>/chaos-runs-spark-<campaign>.jsonl`` — each record id once: a shard that Spark retried on
another executor after losing one gives the same record ids (same campaign id and seeds), and the
copies are dropped and counted — and unpacks the kept runs under ``<out>/<campaign>/runs/``.

Each executor needs what a local run needs: Java 17, ZooKeeper 3.8 (Debian's ``zookeeper`` or
``ZOOKEEPER_HOME``) and the kit installed in the Python that runs the executor's tasks
(``PYSPARK_PYTHON``). A shard checks them first and fails with the missing piece named; Spark
retries a failed shard (``spark.task.maxFailures``) and the campaign then reports it as missing,
with the command that runs it anywhere else. Nothing is left on the cluster: the runner started by
a task dies with the task's Python worker (``PR_SET_PDEATHSIG``), and its nodes and ZooKeeper die
with the runner.
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import contextlib
import io
import json
import math
import os
import socket
import sys
import tarfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.scenarios import resolve_faults, resolve_scenarios
from chaos.shard import SIM_RUNS_PER_SHARD, Shard
from records.run_record import new_run_id

__all__ = ["run_on_spark", "shard_task"]

RUNS_PER_SHARD = 10
#: Kept run directories larger than this travel back without their node logs (the history, the
#: verdict and the transaction records always do).
MAX_KEPT_BYTES = 64 * 2**20


# --- executor side -----------------------------------------------------------------------------------


def _provisioning_problem(python: str, simulated: bool = False) -> str | None:
    """What this executor lacks to run a chaos shard, or ``None`` (a simulated shard needs only
    the kit: no Java, no ZooKeeper)."""
    import importlib.util  # noqa: PLC0415 - executor side: nothing from the kit at import time
    import subprocess  # noqa: PLC0415

    host = socket.gethostname()
    if importlib.util.find_spec("chaos") is None or importlib.util.find_spec("harness") is None:
        return (
            f"executor on {host}: the kit is not importable by {python}; install it there "
            "(pip install -e '<checkout>[chaos]') and point PYSPARK_PYTHON at that Python"
        )
    if simulated:
        return None
    probe = (
        "from harness.zookeeper.jars import find_zookeeper; i = find_zookeeper(); "
        "import subprocess; subprocess.run([str(i.java), '-version'], check=True, capture_output=True)"
    )
    out = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["(no message)"])[-1]
        return f"executor on {host}: Java or ZooKeeper is missing: {last}"
    return None


def _die_with_parent() -> None:  # between fork and exec
    import ctypes  # noqa: PLC0415
    import signal  # noqa: PLC0415

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _archive(run_dir: Path) -> str:
    buf = io.BytesIO()
    size = sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file())
    skip_logs = size > MAX_KEPT_BYTES
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path in sorted(run_dir.rglob("*")):
            if path.is_file() and not (skip_logs and path.suffix == ".log"):
                tar.add(path, arcname=str(path.relative_to(run_dir.parent)))
    return base64.b64encode(buf.getvalue()).decode()


def shard_task(spec: dict[str, Any]) -> Iterator[str]:
    """Run one shard on this executor; yield JSON lines (records, kept runs, the shard's outcome)."""
    import shutil  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    from harness.process import install_cleanup_hooks, new_run_dir  # noqa: PLC0415

    python = sys.executable
    simulated = spec.get("command") == "sim"
    problem = _provisioning_problem(python, simulated)
    if problem:
        raise RuntimeError(problem)
    started = time.monotonic()
    # the shard's directory lives in this worker's reapable run root: a Python worker Spark kills
    # (a cancelled job, a stopped session) leaves nothing the next run's reaper does not remove
    install_cleanup_hooks()
    out = new_run_dir("chaos-shard")
    try:
        command = ["sim"] if simulated else ["run", "--no-progress"]
        argv = [python, "-m", "chaos", *command, "--out", str(out), *spec["argv"]]
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, preexec_fn=_die_with_parent)
        stream = "sim-runs" if simulated else "chaos-runs"
        records = [
            line
            for path in sorted(out.glob(f"{stream}-*.jsonl"))
            for line in path.read_text().splitlines()
            if line
        ]
        if len(records) != spec["expected"]:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
            raise RuntimeError(
                f"shard {spec['shard']} on {socket.gethostname()}: {len(records)} of {spec['expected']} "
                f"run records (runner exit {proc.returncode}):\n{tail}"
            )
        # everything is read before the directory goes: a generator suspended inside the ``with``
        # (an executor that stops consuming, a killed Python worker) would leave it behind
        lines = [json.dumps({"type": "record", "record": json.loads(line)}) for line in records]
        kept = (
            sorted(p.parent for p in out.glob("*/sim.json"))
            if simulated
            else sorted((out / spec["campaign_id"] / "runs").glob("*"))
        )
        lines += [json.dumps({"type": "kept", "archive": _archive(d)}) for d in kept if d.is_dir()]
        lines.append(
            json.dumps(
                {
                    "type": "shard",
                    "shard": spec["shard"],
                    "host": socket.gethostname(),
                    "pid": os.getpid(),
                    "exit": proc.returncode,
                    "elapsed_s": round(time.monotonic() - started, 3),
                }
            )
        )
    finally:
        shutil.rmtree(out, ignore_errors=True)
    yield from lines


# --- driver side -------------------------------------------------------------------------------------


@dataclass
class Campaign:
    """What came back so far."""

    out: Path
    campaign_id: str
    stream: str = "chaos-runs"
    seen: set[str] = field(default_factory=set)
    verdicts: Counter[str] = field(default_factory=Counter)
    duplicates: int = 0
    kept: int = 0
    hosts: Counter[str] = field(default_factory=Counter)
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def records_path(self) -> Path:
        return self.out / f"{self.stream}-spark-{self.campaign_id}.jsonl"

    def take(self, lines: list[str]) -> None:
        with self.records_path.open("a", encoding="utf-8") as fh:
            for line in lines:
                item = json.loads(line)
                if item["type"] == "record":
                    self._record(item["record"], fh)
                elif item["type"] == "kept":
                    self._unpack(item["archive"])
                else:
                    self.hosts[item["host"]] += 1

    def _record(self, record: dict[str, Any], fh: Any) -> None:
        key = record.get("record_id") or f"{record['run_id']}:{record['test_id']}:{record['seed']}"
        if key in self.seen:
            self.duplicates += 1
            return
        self.seen.add(key)
        self.verdicts[{"passed": "valid", "failed": "invalid"}.get(record["outcome"], "unknown")] += 1
        fh.write(json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n")

    def _unpack(self, archive: str) -> None:
        dest = self.out / self.campaign_id / "runs"
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(base64.b64decode(archive)), mode="r:gz") as tar:
            tar.extractall(dest, filter="data")
        self.kept += 1


def _reachable(master: str, timeout_s: float = 5.0) -> str | None:
    problems = []
    for hostport in master.removeprefix("spark://").split(","):
        host, _, port = hostport.rpartition(":")
        try:
            with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
                return None
        except (OSError, ValueError) as exc:
            problems.append(f"{hostport}: {exc.strerror if isinstance(exc, OSError) else exc}")
    return f"Spark master {master} cannot be reached ({'; '.join(problems)}): start it or fix --master"


def _session(master: str, app_name: str) -> Any:
    from pyspark import cloudpickle  # noqa: PLC0415
    from pyspark.sql import SparkSession  # noqa: PLC0415

    # The task travels by value: an executor without the kit can still run it far enough to say
    # what it lacks (a by-reference task would fail to unpickle with a bare ModuleNotFoundError).
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.task.maxFailures", os.environ.get("KZK_SPARK_TASK_MAX_FAILURES", "4"))
        .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    )
    # the driver's scratch (Spark's local dir, the JVM's temporary files) in this process's
    # reapable run root: Spark's own clean-up runs only on an orderly JVM exit
    from harness.process import install_cleanup_hooks, new_run_dir  # noqa: PLC0415

    install_cleanup_hooks()
    scratch = new_run_dir("spark-driver")
    builder = builder.config("spark.local.dir", str(scratch)).config(
        "spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={scratch}"
    )
    hosts = [hp.rpartition(":")[0] for hp in master.removeprefix("spark://").split(",")]
    if all(h in ("127.0.0.1", "localhost") for h in hosts):
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config(
            "spark.driver.host", "127.0.0.1"
        )
    for key, value in os.environ.items():
        if key.startswith("KZK_SPARK_EXECUTOR_ENV_"):
            builder = builder.config(
                f"spark.executorEnv.{key.removeprefix('KZK_SPARK_EXECUTOR_ENV_')}", value
            )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("KZK_SPARK_LOG", "ERROR"))
    return spark


def _shard_argv(args: argparse.Namespace, campaign_id: str, shard: Shard) -> list[str]:
    argv = ["--shard", str(shard), "--campaign-id", campaign_id, "--seed", str(args.seed)]
    argv += ["--runs", str(args.runs)]
    if _simulated(args):
        argv += ["--parallel", str(args.parallel), "--no-shrink"]
    else:
        argv += ["--target", args.target, "--launcher", args.launcher, "--parallel", str(args.parallel)]
    if args.scenario:
        argv += ["--scenario", args.scenario]
    if args.faults:
        argv += ["--faults", args.faults]
    if _simulated(args) and getattr(args, "density", 1) != 1:
        argv += ["--density", str(args.density)]
    if args.keep_all:
        argv.append("--keep-all")
    return argv


def _explain(exc: BaseException) -> str:
    text = str(getattr(exc, "java_exception", None) or exc)
    for line in text.splitlines():
        if "RuntimeError:" in line:
            return line.split("RuntimeError:", 1)[1].strip()[:600]
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return (lines[0] if lines else type(exc).__name__)[:600]


def _run_shard(spark: Any, spec: dict[str, Any]) -> list[str]:
    sc = spark.sparkContext
    sc.setJobDescription(f"chaos shard {spec['shard']}")
    rdd = sc.parallelize([spec], 1).flatMap(shard_task)
    return list(rdd.collect())


def _simulated(args: argparse.Namespace) -> bool:
    return getattr(args, "command", "run") == "sim"


def run_on_spark(args: argparse.Namespace) -> int:
    """``chaos run --master`` or ``chaos sim --master``: exit 0 all valid, 1 any invalid or a shard
    missing, 3 none invalid but some unknown, 2 bad input."""
    problem = _reachable(args.master)
    if problem:
        print(f"python -m chaos: error: {problem}", file=sys.stderr)
        return 2
    scenarios = resolve_faults(args.faults, resolve_scenarios(args.scenario))
    campaign_id = args.campaign_id or new_run_id()
    per_shard = SIM_RUNS_PER_SHARD if _simulated(args) else RUNS_PER_SHARD
    count = args.spark_shards or max(1, math.ceil(args.runs / per_shard))
    shards = [Shard(i, count) for i in range(count) if len(Shard(i, count).indexes(args.runs))]
    args.out.mkdir(parents=True, exist_ok=True)
    campaign = Campaign(args.out, campaign_id, "sim-runs" if _simulated(args) else "chaos-runs")
    print(
        f"campaign {campaign_id}: seed {args.seed}, {args.runs} runs of "
        f"{', '.join(s.name for s in scenarios)} in {len(shards)} shards on {args.master}",
        file=sys.stderr,
    )
    started = time.monotonic()
    spark = _session(args.master, f"kzk-chaos-{campaign_id}")
    try:
        _submit_all(spark, args, campaign, shards, _printer(campaign, len(shards), started))
    finally:
        spark.stop()
    return _summary(args, campaign, shards, time.monotonic() - started)


def _printer(campaign: Campaign, total: int, started: float) -> Callable[[Shard, str | None], None]:
    done = [0]

    def report(shard: Shard, error: str | None) -> None:
        done[0] += 1
        v = campaign.verdicts
        state = f"FAILED: {error}" if error else "done"
        print(
            f"[{done[0]}/{total}] shard {shard} {state}; runs so far: {v['valid']} valid, "
            f"{v['invalid']} invalid, {v['unknown']} unknown ({time.monotonic() - started:.0f} s)",
            file=sys.stderr,
            flush=True,
        )

    return report


def _submit_all(
    spark: Any,
    args: argparse.Namespace,
    campaign: Campaign,
    shards: list[Shard],
    report: Callable[[Shard, str | None], None],
) -> None:
    specs = {
        str(s): {
            "shard": str(s),
            "campaign_id": campaign.campaign_id,
            "argv": _shard_argv(args, campaign.campaign_id, s),
            "command": "sim" if _simulated(args) else "run",
            "expected": len(s.indexes(args.runs)),
        }
        for s in shards
    }
    by_name = {str(s): s for s in shards}
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(shards)) as pool:
        futures = {pool.submit(_run_shard, spark, spec): name for name, spec in specs.items()}
        for future in concurrent.futures.as_completed(futures):
            name = futures[future]
            try:
                campaign.take(future.result())
                report(by_name[name], None)
            except Exception as exc:
                campaign.failed[name] = _explain(exc)
                report(by_name[name], campaign.failed[name])


def _summary(args: argparse.Namespace, campaign: Campaign, shards: list[Shard], elapsed_s: float) -> int:
    v = campaign.verdicts
    total = sum(v.values())
    per_hour = total / elapsed_s * 3600 if elapsed_s > 0 else 0.0
    print(
        f"{total} runs: {v['valid']} valid, {v['invalid']} invalid, {v['unknown']} unknown in "
        f"{elapsed_s:.1f}s = {per_hour:.0f} runs/hour on {len(campaign.hosts)} executor host(s); "
        f"{campaign.duplicates} duplicate record(s) dropped"
    )
    print(f"records: {campaign.records_path}")
    if campaign.kept:
        print(f"kept runs: {args.out / campaign.campaign_id / 'runs'} ({campaign.kept})")
    for name, why in sorted(campaign.failed.items()):
        shard_argv = " ".join(
            _shard_argv(args, campaign.campaign_id, next(s for s in shards if str(s) == name))
        )
        print(
            f"missing shard {name}: {why}\n  run it elsewhere: python -m chaos "
            f"{'sim' if _simulated(args) else 'run'} {shard_argv}",
            file=sys.stderr,
        )
    if campaign.failed or v["invalid"]:
        return 1
    return 3 if v["unknown"] else 0
