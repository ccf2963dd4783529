"""Watch inspection through ZooKeeper's four-letter words ``wchc`` / ``wchp`` (drivers ring).

``wchc`` lists watches by session (``0x<session hex>`` then one ``\\t<path>`` line per path) and
``wchp`` by path (``<path>`` then one ``\\t0x<session hex>`` line per session); both need
``4lw.commands.whitelist`` to include them and print just ``\\n`` when there are none.

What they show (``DataTree.dumpWatches``@release-3.8.0 dumps ``dataWatches`` only; checked
against a 3.8.0 server): data watches (``getData``) and exists watches (``exists``, also on a
path that does not exist) — never child watches (``getChildren``), which live in a separate
``childWatches`` manager that no four-letter word lists. A test therefore cannot observe a
controller's child watches here; it can only observe their effects.

Watches hang off the server-side *connection* of a session: after a client reconnects, only
the watches it re-registered are listed (kazoo re-registers none). Session ids are returned
as signed 64-bit ints, like ``KazooClient.client_id[0]`` and the transaction log's clientId.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from probes import fourlw
from probes.errors import FourLetterWordError

__all__ = [
    "Watches",
    "four_letter_word",
    "parse_wchc",
    "parse_wchp",
    "read_watches",
    "session_id_from_hex",
    "strip_chroot",
]

_REFUSALS = ("is not executed because it is not in the whitelist", "not currently serving requests")


def four_letter_word(host: str, port: int, cmd: str, *, timeout_s: float = 5.0) -> str:
    """Send a four-letter word and return the whole reply (the server closes the socket).

    The one four-letter-word client is :func:`probes.fourlw.four_letter`; this keeps the
    watch readers' argument order."""
    return fourlw.four_letter(port, cmd, host=host, timeout_s=timeout_s)


def session_id_from_hex(text: str) -> int:
    """``0x1000004569700a1`` (``Long.toHexString``, unsigned) → signed 64-bit session id."""
    value = int(text.strip().removeprefix("0x"), 16)
    return value - (1 << 64) if value >= 1 << 63 else value


def _check_reply(cmd: str, text: str) -> None:
    if any(refusal in text for refusal in _REFUSALS):
        raise FourLetterWordError(f"{cmd} refused: {text.strip()}")


def _groups(cmd: str, text: str) -> list[tuple[str, list[str]]]:
    """Split a dump into (head line, tab-indented lines) groups."""
    _check_reply(cmd, text)
    groups: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("\t"):
            if not groups:
                raise FourLetterWordError(f"{cmd}: indented line before any head: {line!r}")
            groups[-1][1].append(line[1:])
        else:
            groups.append((line, []))
    return groups


def parse_wchc(text: str) -> dict[int, set[str]]:
    """Parse ``wchc`` output into ``{session id: {path, ...}}``."""
    try:
        return {session_id_from_hex(head): set(paths) for head, paths in _groups("wchc", text)}
    except ValueError as e:
        raise FourLetterWordError(f"wchc: bad session id in {text!r}") from e


def parse_wchp(text: str) -> dict[str, set[int]]:
    """Parse ``wchp`` output into ``{path: {session id, ...}}``."""
    try:
        return {head: {session_id_from_hex(s) for s in sids} for head, sids in _groups("wchp", text)}
    except ValueError as e:
        raise FourLetterWordError(f"wchp: bad session id in {text!r}") from e


def strip_chroot(by_session: Mapping[int, set[str]], chroot: str) -> dict[int, set[str]]:
    """Keep only paths under ``chroot`` and strip it (``/t1/a`` → ``/a``, ``/t1`` → ``/``).

    Sessions left with no path are dropped.
    """
    root = chroot.rstrip("/")
    out: dict[int, set[str]] = {}
    for sid, paths in by_session.items():
        kept = {p[len(root) :] or "/" for p in paths if not root or p == root or p.startswith(root + "/")}
        if kept:
            out[sid] = kept
    return out


@dataclass(frozen=True, slots=True)
class Watches:
    """One observation of the server's data/exists watches, both ways round."""

    by_session: Mapping[int, set[str]]
    by_path: Mapping[str, set[int]]

    def of_session(self, session_id: int, chroot: str = "") -> frozenset[str]:
        """Paths ``session_id`` watches (chroot stripped, others dropped when ``chroot``)."""
        paths = self.by_session.get(session_id, set())
        return frozenset(strip_chroot({session_id: paths}, chroot).get(session_id, set()))

    def watchers_of(self, path: str) -> frozenset[int]:
        return frozenset(self.by_path.get(path, set()))


def read_watches(four_letter: Callable[[str], str]) -> Watches:
    """Observe watches via ``four_letter(cmd) -> reply`` (e.g. ``ZooKeeperServer.four_letter``).

    ``wchc`` and ``wchp`` are two separate requests, so the two views may differ by whatever
    changed in between.
    """
    return Watches(parse_wchc(four_letter("wchc")), parse_wchp(four_letter("wchp")))
