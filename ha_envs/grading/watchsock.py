"""The Python watch's collector: the record of what the code under test did leaves each watched
process as it is made, over a unix socket, to this host-side listener, out of the test processes'
reach (issue 39, item 3).

Before, every watched interpreter appended its kinds to a file in the grading copy: code under
test could empty it (keeping the header), exit with ``os._exit`` so no process wrote its kinds again
at exit, and leave an empty record. Here the socket lives in a host directory the sandbox shows
read-only (bwrap ``--ro-bind``, a Docker ``ro`` bind): a process inside can connect (``connect`` on a
socket needs no writable mount) but cannot remove, rename or replace it, and what a connection has
sent is in this process's memory. A forgery can add lines (it can connect too) but not take back
one that was sent. Per connection (``ha_py_watch.py`` speaks this):

- ``ha-watch 1`` then a tag: ``+watched`` (an interpreter at start), ``+fork`` (a child of
  ``os.fork`` with something to say), ``+reconnected`` (a process whose first connection was closed,
  replaced or shut down under it), ``+unwatched python 3.x`` (no audit hooks);
- one kind per line as it is seen; ``+end`` at exit (the watch's own atexit handler, run last).

A watched connection that ends without ``+end`` (``os._exit``, a kill, its descriptor closed; an
``os.exec*`` sends ``+end`` first), one still open GRACE_S after the command, one that says
``+reconnected``, or one with more than one ``+end`` is ``watch_severed``: compared with the
gold run's record like every kind (a gold run whose workers leave by ``os._exit`` shows it too). A
forged ``+end`` on a connection of the forgery's own says nothing about any other connection.
"""

from __future__ import annotations

import os
import secrets
import selectors
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HEADER = "ha-watch 1"
MAX_KINDS = 64
MAX_CONN_BYTES = 16 << 10  # an honest process sends at most ~64 kinds of <= 80 bytes
MAX_CONNS = 4096
GRACE_S = 5.0  # only spent where a process outlives the command; 0.5 s made a late child's timing under load decide the record


@dataclass
class Stream:
    """What one connection sent (``data`` capped at MAX_CONN_BYTES) and whether it is closed."""

    data: bytearray = field(default_factory=bytearray)
    closed: bool = False
    over: bool = False


class Collector:
    """A listening unix socket in ``host_dir`` (a directory the sandbox shows read-only) and a
    thread that reads every connection into its own ``Stream`` until ``close``."""

    def __init__(self, host_dir: str | Path) -> None:
        self.name = f"{secrets.token_hex(6)}.sock"
        self.path = str(Path(host_dir) / self.name)
        self.streams: list[Stream] = []
        self.refused = 0
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.path)
        os.chmod(self.path, 0o777)  # any uid in the container (root without capabilities, nobody)
        self._listener.listen(256)
        self._listener.setblocking(False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._listener, selectors.EVENT_READ, None)
        self._wake_r, self._wake_w = os.pipe()
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._stop = False
        self._thread = threading.Thread(target=self._loop, name="ha-watch-collector", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop:
            for key, _ in self._sel.select(timeout=1.0):
                if key.data == "wake":
                    return
                if key.data is None:
                    self._accept()
                else:
                    self._read(key.fileobj, key.data)  # type: ignore[arg-type]

    def _accept(self) -> None:
        try:
            conn, _ = self._listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        if len(self.streams) >= MAX_CONNS:
            # past the cap (a forgery opening connections so that later processes go unheard): each
            # refused one counts as a watched connection cut and flooded
            self.refused += 1
            conn.close()
            if self.refused == 1:
                self.streams.append(Stream(bytearray(f"{HEADER}\n+watched\n".encode()), closed=True, over=True))
            return
        conn.setblocking(False)
        stream = Stream()
        self.streams.append(stream)
        self._sel.register(conn, selectors.EVENT_READ, stream)

    def _read(self, conn: socket.socket, stream: Stream) -> None:
        try:
            chunk = conn.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            stream.closed = True
            self._sel.unregister(conn)
            conn.close()
            return
        room = MAX_CONN_BYTES - len(stream.data)
        stream.data += chunk[:max(room, 0)]
        stream.over = stream.over or len(chunk) > room

    def _settle(self) -> None:
        """Read what is queued (an exited process's lines and EOF are, at once); where a connection is
        still open, wait up to GRACE_S for it to end: a child its parent did not wait for may be
        exiting just now, and whether it made it in time must not decide the record."""
        deadline = time.monotonic() + GRACE_S
        for _ in range(100000):
            waiting = any(not st.closed for st in self.streams)
            left = deadline - time.monotonic() if waiting else 0
            events = self._sel.select(timeout=max(left, 0))
            if not events:
                if not waiting or left <= 0:
                    return
                continue
            for key, _ in events:
                if key.data is None:
                    self._accept()
                else:
                    self._read(key.fileobj, key.data)  # type: ignore[arg-type]

    def close(self) -> list[Stream]:
        """Stop listening, read what is still waiting (the command is over: its processes' last
        lines and EOFs are queued), and hand back every connection's stream (one still open stays
        ``closed=False``: its process outlived the test command)."""
        if not self._stop:
            self._stop = True
            os.write(self._wake_w, b"x")
            self._thread.join(timeout=10)
            self._sel.unregister(self._wake_r)
            self._settle()
            for key in list(self._sel.get_map().values()):
                key.fileobj.close()  # type: ignore[union-attr]
            self._sel.close()
            os.close(self._wake_r)
            os.close(self._wake_w)
            try:
                os.unlink(self.path)
            except OSError:
                pass
        return self.streams


def stream_kinds(streams: list[Stream]) -> tuple[set[str], bool, bool]:
    """(kinds, watched, any connection at all) from the collector's streams: ``watched`` when some
    connection said ``+watched``; ``watch_severed`` per connection as the module says."""
    kinds: set[str] = set()
    watched = False
    for st in streams:
        lines = st.data.decode("utf-8", "replace").split("\n")
        complete, tail = lines[:-1], lines[-1]
        if not complete or complete[0] != HEADER:
            kinds.add("watch_garbled")  # not the watch's: a forgery's own connection, say
            continue
        tag = complete[1] if len(complete) > 1 else ""
        if tag.startswith("+unwatched"):
            continue
        watched = watched or tag in ("+watched", "+fork", "+reconnected")
        body = complete[2:]
        ends = body.count("+end")
        if tag == "+reconnected" or ends != 1 or not st.closed or tail or st.over:
            kinds.add("watch_severed")
        kinds.update(x for x in body if x and not x.startswith("+") and len(x) <= 80)
        if st.over:
            kinds.add("watch_flooded")
    return kinds, watched, bool(streams)


def capped(kinds: set[str]) -> list[str]:
    """The record as a sorted list of at most MAX_KINDS kinds; past it ``watch_flooded`` takes the last
    place (a forgery that adds many made-up kinds cannot push a real one off the end unseen)."""
    out = sorted(kinds)
    if len(out) > MAX_KINDS:
        out = sorted(out[:MAX_KINDS - 1] + ["watch_flooded"])
    return out
