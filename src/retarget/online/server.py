"""The live server's transports (``retarget serve``): UDP or stdin in; WebSocket, UDP or stdout out.

One asyncio loop moves messages between the transports and a
:class:`~retarget.online.stream.LiveStream`, which does all the work of a
frame; nothing here parses or retargets. Addresses:

* in: ``udp://HOST:PORT`` (one frame per datagram) or ``stdin`` (one per
  line; the server stops at the end of input);
* out: ``ws://HOST:PORT`` (a WebSocket server, the ``websockets`` library:
  each client gets the skeleton message when it connects, then every pose),
  ``udp://HOST:PORT`` (datagrams to a receiver: the skeleton message first and
  then once a second, since UDP has no connection), ``stdout`` (JSON lines,
  flushed each).

Port 0 picks a free port; the addresses in use are printed on stderr when
the server is ready (``retarget serve: ready udp://127.0.0.1:40311 ->
ws://127.0.0.1:40312``). The server stops on SIGINT or SIGTERM, at the end
of stdin, or after ``duration`` seconds, and reports its
:class:`~retarget.online.stream.StreamStats` (counts, per-frame time
percentiles).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..core.errors import RetargetError
from .stream import LiveStream

__all__ = ["parse_address", "serve", "summary_line"]


def parse_address(text: str, schemes: Sequence[str]) -> tuple[str, str, int]:
    """``scheme://host:port`` (or a bare ``stdin``/``stdout``) → (scheme, host, port)."""
    if text in ("stdin", "stdout", "-"):
        scheme = text if text != "-" else schemes[-1]
        if scheme not in schemes:
            raise RetargetError(f"{text!r} cannot be used here; expected one of {schemes}")
        return scheme, "", 0
    parts = urlsplit(text)
    if parts.scheme not in schemes or parts.scheme in ("stdin", "stdout"):
        forms = [s if s in ("stdin", "stdout") else f"{s}://HOST:PORT" for s in schemes]
        raise RetargetError(f"{text!r}: expected {' or '.join(forms)}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname or port is None:
        raise RetargetError(f"{text!r}: expected {parts.scheme}://HOST:PORT")
    return parts.scheme, parts.hostname, port


class _Datagrams(asyncio.DatagramProtocol):
    def __init__(self, handle: Callable[[bytes], None]) -> None:
        self.handle = handle

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.handle(data)


async def serve(
    stream: LiveStream,
    source: str,
    sinks: Sequence[str],
    *,
    duration: float | None = None,
    ready: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the server until stopped (module docstring); return the stream's summary.

    Parameters
    ----------
    stream : LiveStream
    source : str
        ``udp://HOST:PORT`` or ``stdin``.
    sinks : sequence of str
        ``ws://HOST:PORT``, ``udp://HOST:PORT``, ``stdout``.
    duration : float, optional
        Seconds to run.
    ready : callable, optional
        Called with the line announcing the addresses in use (default: print on stderr).
    """
    import websockets

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    header = stream.header()
    clients: set[Any] = set()
    senders: list[Callable[[str], None]] = []
    names: list[str] = []
    closers: list[Callable[[], Any]] = []
    udp_out: list[tuple[asyncio.DatagramTransport, tuple[str, int]]] = []

    async def connected(ws: Any) -> None:
        await ws.send(header)
        clients.add(ws)
        try:
            await ws.wait_closed()
        finally:
            clients.discard(ws)

    for sink in sinks:
        scheme, host, port = parse_address(sink, ("ws", "udp", "stdout"))
        if scheme == "ws":
            server = await websockets.serve(connected, host, port, compression=None)
            bound = server.sockets[0].getsockname()[1]
            names.append(f"ws://{host}:{bound}")

            def to_clients(text: str) -> None:
                websockets.broadcast(clients, text)

            senders.append(to_clients)
            closers.append(server.close)
        elif scheme == "udp":
            transport, _ = await loop.create_datagram_endpoint(
                asyncio.DatagramProtocol, remote_addr=(host, port)
            )
            udp_out.append((transport, (host, port)))
            names.append(f"udp://{host}:{port}")

            def to_receiver(text: str, t: asyncio.DatagramTransport = transport) -> None:
                t.sendto(text.encode())

            senders.append(to_receiver)
            closers.append(transport.close)
        else:
            sys.stdout.write(header + "\n")
            sys.stdout.flush()
            names.append("stdout")

            def to_stdout(text: str) -> None:
                sys.stdout.write(text + "\n")
                sys.stdout.flush()

            senders.append(to_stdout)

    def handle(message: bytes | str) -> None:
        t0 = time.perf_counter()
        out = stream.receive(message)
        if out is not None:
            for send in senders:
                send(out)
            stream.stats.record(time.perf_counter() - t0)

    scheme, host, port = parse_address(source, ("udp", "stdin"))
    reader: asyncio.Task[None] | None = None
    if scheme == "udp":
        transport, _ = await loop.create_datagram_endpoint(
            lambda: _Datagrams(handle), local_addr=(host, port)
        )
        bound = transport.get_extra_info("sockname")[1]
        source_name = f"udp://{host}:{bound}"
        closers.append(transport.close)
    else:
        source_name = "stdin"

        async def read_stdin() -> None:
            lines = sys.stdin.buffer
            while True:
                line = await loop.run_in_executor(None, lines.readline)
                if not line:
                    break
                if line.strip():
                    handle(line)
            stop.set()

        reader = asyncio.ensure_future(read_stdin())
    stream.name = source_name

    async def heartbeat() -> None:  # UDP receivers learn the skeleton once a second
        while True:
            for transport, _ in udp_out:
                transport.sendto(header.encode())
            await asyncio.sleep(1.0)

    beat = asyncio.ensure_future(heartbeat()) if udp_out else None
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    stream.warm_up()  # kernels loaded before "ready": the first frame does not wait
    announce = f"retarget serve: ready {source_name} -> {', '.join(names)}"
    (ready or (lambda text: print(text, file=sys.stderr, flush=True)))(announce)
    try:
        if duration is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), duration)
        else:
            await stop.wait()
    finally:
        for task in (beat, reader):
            if task is not None:
                task.cancel()
        for close in closers:
            close()
    return stream.stats.summary()


def summary_line(summary: dict[str, Any]) -> str:
    """The stream's counts and the p50/p99 server time, on one line."""
    ms = summary.get("server_ms", {})
    times = f", server p50 {ms['p50']:.3f} ms, p99 {ms['p99']:.3f} ms" if ms else ""
    return (
        f"retarget serve: {summary['received']} received, {summary['poses']} poses, "
        f"{summary['malformed']} malformed, {summary['late']} late, "
        f"{summary['duplicate']} duplicate, {summary['gaps']} gaps "
        f"({summary['predicted']} frames predicted), {summary['restarts']} restarts, "
        f"{summary['failed']} not posed{times}"
    )
