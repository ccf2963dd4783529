"""`KazooZkPort`: the controller core's `ZkPort` on kazoo (ring: drivers).

Kafka's `ZooKeeperClient` + `KafkaZkClient` request layer, on kazoo's raw async API:

- **Handlers and one-shot watches** (ZooKeeperClient.scala@2.5.1 L278-281, L440-455). Handlers live
  in memory; `exists`/`get_data` set a data watch iff a node handler is registered for the path,
  `get_children` a child watch iff a child handler is. One watcher callable serves every path (kazoo
  keeps watchers in a set per path, so re-reading never duplicates an event — like Kafka's single
  `ZooKeeperClientWatcher`; on DELETED kazoo calls it once per watch list, data and child, with the
  same event object, which is handled once, as Java's watcher set does). When a watch fires, the
  handler registered *at that moment* decides the event: CREATED → `on_create`, DELETED →
  `on_delete` (only the node handler, as in Kafka), CHANGED → `on_data_change`, CHILD →
  `on_child_change`. kazoo's NONE event (it calls every watcher once when the connection drops and
  forgets them) is not an event: see `ZkReconnected` below.
- **Pipelining**: every batch of requests is sent before the first result is awaited (kazoo keeps
  them in order on one connection); results come back in request order.
- **Fenced writes** (KafkaZkClient.scala@2.5.1 L1870-1927): by default one
  `multi[check /controller_epoch v, op]` per op, all in flight together; a BADVERSION on any check
  raises `ControllerMovedError` after every result is collected. With
  `reference.controller.zk.batch.writes=true` (not Kafka) consecutive ops share one multi with one
  check, groups are sent one after another (so a failed group can be replayed in place without
  reordering writes), and a group of several ops that fails on an op is replayed one op per multi so
  that the per-op results (and the txn log's successful writes) are exactly those of the default
  mode (NODEEXISTS on `partitions/<p>` — MIDCREATE-2); a failed group of one is not replayed.
- **Lean multis** (issue 13): every multi (fenced or not) is pre-encoded by `multiwrite.py` to the
  bytes kazoo's own `Create`/`SetData`/`Delete`/`CheckVersion` records in a `Transaction` would
  send, queued on kazoo's connection a chunk at a time with one wake-up, and awaited once per batch
  (`_run_multis`); its answer is decoded to plain values and mapped to `OpResult`s as kazoo's
  exceptions were. The connection loop's own cost is the kazoo handler's (`kazoo_handler.py`).
- **Null data**: kazoo's `TransactionRequest.create/set_data` reject `None`, but its wire classes
  write `None` as length -1 (ZooKeeper's null), and so does `multiwrite.encode_op`:
  `CreateOp(data=None)` stores real null, as Kafka does. Reads return `None` for null data and
  `b""` for empty data (kazoo's `read_buffer` keeps the difference).
- **Multi results**: the failing op carries its code; ZooKeeper marks the other ops of a failed
  multi as rolled back (code 0 before the failing op, RUNTIME_INCONSISTENCY after it). `OpResult`
  has no "rolled back" code, so every other op of a failed multi reports RUNTIME_INCONSISTENCY
  (never OK: nothing of a failed multi was applied).
- **Connection state** (`_SessionGate`, fed by a kazoo listener that never calls ZooKeeper):
  while SUSPENDED every port call blocks before sending; requests lost with the connection
  (CONNECTIONLOSS) are re-sent after reconnection, like Kafka's `retryRequestsUntilConnected`.
  SUSPENDED → CONNECTED (same session) enqueues `ZkReconnected`: kazoo never sends SetWatches, so
  every server-side watch is gone and the core must re-read its watched paths. LOST puts `Expire`
  at the head of the queue (clear-and-put) and makes any call in progress raise
  `ZkSessionLostError` (results on a new session would be meaningless).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from kazoo.exceptions import EXCEPTIONS, ConnectionLoss, KazooException, SessionExpiredError
from kazoo.protocol.states import EventType, KazooState, WatchedEvent, ZnodeStat

from reference_controller.controller.driver import ZkSessionLostError, ZkUnexpectedError
from reference_controller.controller.driver.multiread import MultiRead, MultiReadSupport, ReadOp
from reference_controller.controller.driver.multiwrite import (
    MultiRequest,
    Pipeline,
    encode_multi,
    encode_op,
    stat_of,
)
from reference_controller.controller.events import ControllerEvent, Expire, ZkReconnected
from reference_controller.controller.ports import (
    CheckOp,
    ChildHandler,
    ControllerMovedError,
    CreateOp,
    DataResult,
    NodeHandler,
    OpResult,
    SetDataOp,
    Stat,
    ZkCode,
    ZkOp,
)
from reference_controller.zkdata import CONTROLLER_EPOCH

log = logging.getLogger("kafka.zookeeper.ZooKeeperClient")

DEFAULT_BATCH_SIZE = 100
"""Ops per multi in batching mode (one check op + up to this many writes, well under jute.maxbuffer)."""
#: Reads per ``multiRead`` request: a partition state znode answers ~200 bytes, so 500 stay far
#: below ZooKeeper's 1 MiB ``jute.maxbuffer`` even for topic znodes of many partitions.
MULTI_READ_CHUNK = 500
#: Pipelined multis handed to kazoo's connection per wake-up: the server works on the first
#: chunk while the next is encoded and queued.
SEND_CHUNK = 256


class AsyncResult(Protocol):
    def get(self, block: bool = ..., timeout: float | None = ...) -> Any: ...


Submit = Callable[[], AsyncResult]


def to_stat(stat: ZnodeStat) -> Stat:
    return Stat(
        version=stat.version,
        cversion=stat.cversion,
        czxid=stat.czxid,
        mzxid=stat.mzxid,
        ephemeral_owner=stat.ephemeralOwner,
        num_children=stat.numChildren,
        data_length=stat.dataLength,
    )


def zk_code(exc: BaseException) -> ZkCode:
    """The ZkCode of a kazoo exception; rolled-back ops (code 0) become RUNTIME_INCONSISTENCY."""
    code = getattr(exc, "code", None)
    if code == 0:
        return ZkCode.RUNTIME_INCONSISTENCY
    try:
        return ZkCode(int(code))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ZkUnexpectedError(f"ZooKeeper error {exc!r} (code {code})") from exc


class _SessionGate:
    """Connection state for the event thread: blocks calls while SUSPENDED, fails them after LOST."""

    def __init__(self, connected: bool) -> None:
        self._cond = threading.Condition()
        self._connected = connected
        self._generation = 0  # incremented on every LOST (a session ends)
        self._closed = False

    @property
    def generation(self) -> int:
        with self._cond:
            return self._generation

    def set_connected(self, connected: bool) -> None:
        with self._cond:
            self._connected = connected
            self._cond.notify_all()

    def session_lost(self) -> None:
        with self._cond:
            self._connected = False
            self._generation += 1
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def wait_connected(self, generation: int) -> None:
        with self._cond:
            while True:
                if self._closed:
                    raise ZkSessionLostError("the ZooKeeper port is closed")
                if self._generation != generation:
                    raise ZkSessionLostError("the ZooKeeper session expired during the request")
                if self._connected:
                    return
                self._cond.wait()


class KazooZkPort:
    """`ZkPort` over a started `KazooClient`. Call `close()` before stopping the client."""

    def __init__(
        self,
        zk: Any,
        enqueue: Callable[[ControllerEvent], None],
        batch_writes: bool = False,
        *,
        clear_and_put: Callable[[ControllerEvent], None] | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        multi_read: bool = True,
    ) -> None:
        self._zk = zk
        #: Unwatched reads of several znodes go out as ``multiRead`` batches while the server
        #: serves them (ZooKeeper 3.6+); the first refusal switches to per-request reads for good.
        self._multi_read = MultiReadSupport(enabled=multi_read)
        self._enqueue = enqueue
        self._clear_and_put = clear_and_put or enqueue
        self.batch_writes = batch_writes
        self._batch_size = max(1, batch_size)
        self._lock = threading.Lock()
        self._node_handlers: dict[str, NodeHandler] = {}
        self._child_handlers: dict[str, ChildHandler] = {}
        self._gate = _SessionGate(connected=zk.state == KazooState.CONNECTED)
        self._last_state: str = zk.state
        self._last_watch_event: WatchedEvent | None = None
        zk.add_listener(self._on_state)

    def close(self) -> None:
        """Detach from the client: no more state events; calls in progress raise."""
        self._zk.remove_listener(self._on_state)
        self._gate.close()

    # ---- connection state (kazoo's session thread: never call ZooKeeper here) ------------------
    def _on_state(self, state: str) -> bool:
        previous, self._last_state = self._last_state, state
        if state == KazooState.SUSPENDED:
            log.info("ZooKeeper connection suspended; pausing controller ZooKeeper work")
            self._gate.set_connected(False)
        elif state == KazooState.LOST:
            log.info("ZooKeeper session lost")
            self._gate.session_lost()
            self._clear_and_put(Expire())
        elif state == KazooState.CONNECTED:
            self._gate.set_connected(True)
            if previous == KazooState.SUSPENDED:
                log.info("ZooKeeper reconnected (same session); every watch must be re-armed")
                self._enqueue(ZkReconnected())
        return False  # keep the listener

    # ---- handler registry ----------------------------------------------------------------------
    def register_node_handler(self, handler: NodeHandler) -> None:
        with self._lock:
            self._node_handlers[handler.path] = handler

    def unregister_node_handler(self, path: str) -> None:
        with self._lock:
            self._node_handlers.pop(path, None)

    def register_child_handler(self, handler: ChildHandler) -> None:
        with self._lock:
            self._child_handlers[handler.path] = handler

    def unregister_child_handler(self, path: str) -> None:
        with self._lock:
            self._child_handlers.pop(path, None)

    def _node_watch(self, path: str) -> Callable[[WatchedEvent], None] | None:
        with self._lock:
            return self._on_watch if path in self._node_handlers else None

    def _child_watch(self, path: str) -> Callable[[WatchedEvent], None] | None:
        with self._lock:
            return self._on_watch if path in self._child_handlers else None

    def _on_watch(self, event: WatchedEvent) -> None:
        """kazoo's watch thread: look the handler up now, enqueue its event, nothing else."""
        if event.type == EventType.NONE or event.path is None:
            return  # connection dropped; ZkReconnected / Expire cover it
        if event is self._last_watch_event:
            return  # kazoo calls a watcher once per watch list (data + child on DELETED); Java once
        self._last_watch_event = event
        with self._lock:
            node = self._node_handlers.get(event.path)
            child = self._child_handlers.get(event.path)
        controller_event: ControllerEvent | None = None
        if event.type == EventType.CHILD:
            controller_event = child.on_child_change if child else None
        elif node is not None:
            controller_event = {
                EventType.CREATED: node.on_create,
                EventType.DELETED: node.on_delete,
                EventType.CHANGED: node.on_data_change,
            }.get(event.type)
        if controller_event is not None:
            self._enqueue(controller_event)

    # ---- request execution ----------------------------------------------------------------------
    def _run(self, submits: Sequence[Submit]) -> list[Any]:
        """Send every request, then collect in order: a value or a ZooKeeper exception each.
        CONNECTIONLOSS ⇒ wait for the connection and re-send those requests (a suffix)."""
        generation = self._gate.generation
        outcomes: list[Any] = [None] * len(submits)
        pending = list(range(len(submits)))
        while pending:
            self._gate.wait_connected(generation)
            in_flight = [(i, submits[i]()) for i in pending]
            pending = []
            for i, result in in_flight:
                try:
                    outcomes[i] = result.get()
                except ConnectionLoss:
                    pending.append(i)
                except SessionExpiredError as exc:  # includes ConnectionClosedError
                    raise ZkSessionLostError(str(exc) or type(exc).__name__) from exc
                except KazooException as exc:
                    outcomes[i] = exc
        return outcomes

    def _run_multis(self, count: int, body: Callable[[int], bytes]) -> list[Any]:
        """`_run` for pre-encoded multis (`body(i)`: the i-th multi's body, encoded when its chunk
        is sent): per multi its decoded results (`multiwrite.decode_multi`) or a ZooKeeper
        exception, mapped as `_run` maps them. Sent in chunks of `SEND_CHUNK` (the server starts on
        the first while the next is encoded and queued), each chunk with one wake-up of kazoo's
        connection thread, the whole batch with one wait; a chunk is not sent once the connection
        has dropped (kazoo would queue it for the next connection, ahead of the earlier requests it
        fails with CONNECTIONLOSS): it is re-sent with them, in order."""
        zk = self._zk
        generation = self._gate.generation
        bodies: list[bytes] = []
        outcomes: list[Any] = [None] * count
        pending = list(range(count))
        while pending:
            self._gate.wait_connected(generation)
            pipeline = Pipeline(len(pending))
            for start in range(0, len(pending), SEND_CHUNK):
                chunk = pending[start : start + SEND_CHUNK]
                while len(bodies) <= chunk[-1]:
                    bodies.append(body(len(bodies)))
                if not zk.connected:
                    pipeline.abandon(range(start, len(pending)), ConnectionLoss())
                    break
                pipeline.send(zk, [MultiRequest(bodies[i]) for i in chunk], start)
            pipeline.wait()
            retry: list[int] = []
            for i, value, error in zip(pending, pipeline.values, pipeline.errors, strict=True):
                if error is None:
                    outcomes[i] = value
                elif isinstance(error, ConnectionLoss):
                    retry.append(i)
                elif isinstance(error, SessionExpiredError):  # includes ConnectionClosedError
                    raise ZkSessionLostError(str(error) or type(error).__name__) from error
                elif isinstance(error, KazooException):
                    outcomes[i] = error
                else:
                    raise error  # not ZooKeeper's answer (e.g. an undecodable response), as `_run`
            pending = retry
        return outcomes

    # ---- reads ----------------------------------------------------------------------------------
    def get_data(self, paths: Sequence[str]) -> list[DataResult]:
        """Watched reads one by one (the watch is armed by that read, as Kafka's); the unwatched
        ones in ``multiRead`` batches when the server has it, else pipelined per request."""
        watches = [self._node_watch(path) for path in paths]
        unwatched = [i for i, watch in enumerate(watches) if watch is None]
        outcomes: list[Any] = [None] * len(paths)
        batched = self._read_batched([paths[i] for i in unwatched]) if len(unwatched) > 1 else None
        if batched is not None:
            for i, outcome in zip(unwatched, batched, strict=True):
                outcomes[i] = outcome
        singles = [i for i in range(len(paths)) if batched is None or watches[i] is not None]
        submits = [self._get_submit(paths[i], watches[i]) for i in singles]
        for i, outcome in zip(singles, self._run(submits), strict=True):
            outcomes[i] = outcome
        results: list[DataResult] = []
        for path, outcome in zip(paths, outcomes, strict=True):
            if isinstance(outcome, Exception):
                if zk_code(outcome) != ZkCode.NONODE:
                    raise ZkUnexpectedError(f"getData {path}: {outcome!r}")
                results.append(DataResult(path, None, None))
            else:
                data, stat = outcome
                results.append(DataResult(path, data, to_stat(stat)))
        return results

    def _get_submit(self, path: str, watch: Callable[[WatchedEvent], None] | None) -> Submit:
        # ``watch`` is decided when the read is built, as Kafka's shouldWatch
        return lambda: self._zk.get_async(path, watch=watch)

    def _read_batched(self, paths: Sequence[str]) -> list[Any] | None:
        """getData of every path by ``multiRead`` (chunks of ``MULTI_READ_CHUNK``): per path a
        ``(data, stat)`` or a ZooKeeper exception, as the per-request path gives; None when the
        server does not serve ``multiRead`` (remembered, logged once at INFO)."""
        if not self._multi_read.usable:
            return None
        chunks = [paths[i : i + MULTI_READ_CHUNK] for i in range(0, len(paths), MULTI_READ_CHUNK)]
        try:
            outcomes = self._run([self._multi_read_submit(chunk) for chunk in chunks])
        except (ZkSessionLostError, ZkUnexpectedError):
            raise
        except Exception as exc:  # an answer that is not a multiRead response (e.g. ZooKeeper 3.5)
            outcomes = [exc]
        refused = next((o for o in outcomes if isinstance(o, Exception)), None)
        if refused is not None:
            if self._multi_read.record(False):
                log.info("ZooKeeper does not serve multiRead (%r); reading znodes one request each", refused)
            return None
        if self._multi_read.record(True):
            log.debug("ZooKeeper serves multiRead; batching unwatched reads")
        return [result for chunk_results in outcomes for result in chunk_results]

    def _multi_read_submit(self, paths: Sequence[str]) -> Submit:
        request = MultiRead([ReadOp("data", self._chrooted(path)) for path in paths])

        def submit() -> AsyncResult:
            result: AsyncResult = self._zk.handler.async_result()
            self._zk._call(request, result)  # kazoo's own request path (no public API for opcode 22)
            return result

        return submit

    def get_children(self, path: str) -> list[str] | None:
        watch = self._child_watch(path)
        (outcome,) = self._run([lambda: self._zk.get_children_async(path, watch=watch)])
        if isinstance(outcome, Exception):
            if zk_code(outcome) == ZkCode.NONODE:
                return None
            raise ZkUnexpectedError(f"getChildren {path}: {outcome!r}")
        return list(outcome)

    def exists(self, path: str) -> Stat | None:
        watch = self._node_watch(path)
        (outcome,) = self._run([lambda: self._zk.exists_async(path, watch=watch)])
        if isinstance(outcome, Exception):
            raise ZkUnexpectedError(f"exists {path}: {outcome!r}")
        return None if outcome is None else to_stat(outcome)

    def session_id(self) -> int:
        session = self._zk.client_id
        return int(session[0]) if session else 0

    # ---- writes ---------------------------------------------------------------------------------
    def create(self, op: CreateOp) -> OpResult:
        zk = self._zk
        (outcome,) = self._run(
            [lambda: zk.create_async(op.path, op.data, ephemeral=op.ephemeral, sequence=op.sequential)]
        )
        if isinstance(outcome, Exception):
            return OpResult(op, zk_code(outcome))
        return OpResult(op, ZkCode.OK, created_path=outcome)

    def multi(self, ops: Sequence[ZkOp]) -> list[OpResult]:
        (outcome,) = self._run_multis(1, lambda _i: encode_multi([self._encode(op) for op in ops]))
        return self._multi_results(ops, outcome)

    def fenced(self, ops: Sequence[ZkOp], epoch_zk_version: int) -> list[OpResult]:
        if not ops:
            return []
        if self.batch_writes and len(ops) > 1:
            return self._fenced_batched(ops, epoch_zk_version)
        return self._fenced_each(ops, epoch_zk_version)

    def _fenced_each(self, ops: Sequence[ZkOp], epoch_zk_version: int) -> list[OpResult]:
        """Kafka: one `multi[check, op]` per op, all in flight; moved ⇒ raise after collecting."""
        check = CheckOp(CONTROLLER_EPOCH, epoch_zk_version)
        encoded_check = self._encode(check)
        encode = self._encode
        outcomes = self._run_multis(len(ops), lambda i: encode_multi((encoded_check, encode(ops[i]))))
        results: list[OpResult] = []
        moved = False
        ok = ZkCode.OK
        for op, outcome in zip(ops, outcomes, strict=True):
            applied = type(outcome) is list and len(outcome) == 2 and outcome[0] is None
            if applied and type(raw := outcome[1]) is not int:
                # both ops applied (the common case): what `_multi_results` + `_check_moved` give
                if isinstance(op, SetDataOp):
                    results.append(OpResult(op, ok, stat=stat_of(raw)))
                elif isinstance(op, CreateOp):
                    results.append(OpResult(op, ok, created_path=raw))
                else:
                    results.append(OpResult(op, ok))
                continue
            check_result, op_result = self._multi_results((check, op), outcome)
            moved = moved or self._check_moved(check_result)
            results.append(op_result)
        if moved:
            raise ControllerMovedError(
                f"Controller epoch zkVersion check fails. Expected zkVersion = {epoch_zk_version}"
            )
        return results

    def _fenced_batched(self, ops: Sequence[ZkOp], epoch_zk_version: int) -> list[OpResult]:
        """Not Kafka: groups of ops behind one check, sent in order; a group that fails on an op is
        replayed op by op in place, so the writes and per-op results equal the default mode's."""
        check = CheckOp(CONTROLLER_EPOCH, epoch_zk_version)
        results: list[OpResult] = []
        for start in range(0, len(ops), self._batch_size):
            group = list(ops[start : start + self._batch_size])
            body = encode_multi([self._encode(op) for op in (check, *group)])
            (outcome,) = self._run_multis(1, lambda _i: body)  # noqa: B023 - called right here
            group_results = self._multi_results([check, *group], outcome)
            if self._check_moved(group_results[0]):
                raise ControllerMovedError(
                    f"Controller epoch zkVersion check fails. Expected zkVersion = {epoch_zk_version}"
                )
            if len(group) == 1 or all(r.ok for r in group_results):
                # a group of one is already `multi[check, op]`: its result is the default mode's
                # (replaying it would log a second, duplicate failed multi)
                results.extend(group_results[1:])
            else:
                results.extend(self._fenced_each(group, epoch_zk_version))
        return results

    @staticmethod
    def _check_moved(check_result: OpResult) -> bool:
        """Kafka's unwrap: BADVERSION on the check ⇒ moved; another failure of the check itself
        (e.g. NONODE) ⇒ KeeperException; a check rolled back because the op failed is fine."""
        if check_result.code == ZkCode.BADVERSION:
            return True
        if check_result.code not in (ZkCode.OK, ZkCode.RUNTIME_INCONSISTENCY):
            raise ZkUnexpectedError(f"fencing check on {CONTROLLER_EPOCH} failed: {check_result.code.name}")
        return False

    def _encode(self, op: ZkOp) -> bytes:
        """One sub-op as kazoo's own records would serialise it (null data stays null)."""
        return encode_op(op, self._chrooted(op.path))

    def _chrooted(self, path: str) -> str:
        chroot: str = self._zk.chroot or ""
        if not chroot:
            return path
        return chroot if path == "/" else chroot + path

    @staticmethod
    def _multi_results(ops: Sequence[ZkOp], outcome: Any) -> list[OpResult]:
        """Per op its result, from a decoded multi answer (`multiwrite.decode_multi`: a created
        path, a setData stat tuple, None, or the op's error code) or the whole multi's exception."""
        if isinstance(outcome, Exception):  # the whole multi failed (reply header error)
            code = zk_code(outcome)
            return [OpResult(op, code) for op in ops]
        failed = any(type(raw) is int for raw in outcome)
        results: list[OpResult] = []
        for op, raw in zip(ops, outcome, strict=True):
            if type(raw) is int:  # the op's error code; 0 = rolled back
                results.append(OpResult(op, _op_code(raw)))
            elif failed:  # cannot happen per ZooKeeper, but never report OK inside a failed multi
                results.append(OpResult(op, ZkCode.RUNTIME_INCONSISTENCY))
            elif isinstance(op, CreateOp):
                results.append(OpResult(op, ZkCode.OK, created_path=raw))
            elif isinstance(op, SetDataOp):
                results.append(OpResult(op, ZkCode.OK, stat=stat_of(raw)))
            else:
                results.append(OpResult(op, ZkCode.OK))
        return results


def _op_code(code: int) -> ZkCode:
    """`zk_code` of the exception kazoo would build for an op's error code (kazoo's
    `EXCEPTIONS[code]()`, whose unknown codes raise RuntimeError as kazoo's decoding does)."""
    if code == 0:
        return ZkCode.RUNTIME_INCONSISTENCY
    try:
        return ZkCode(code)
    except ValueError:
        return zk_code(EXCEPTIONS[code]())
