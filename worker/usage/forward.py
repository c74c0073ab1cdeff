"""In-sandbox forwarder for sandboxes without the host's network (the local backend unshares the
network namespace of every process it starts).

Runs inside the sandbox as the agent's launcher: listens on ``127.0.0.1:PORT`` in the agent's own
network namespace, relays every connection to the model proxy's unix socket (a host file the
sandbox sees read-only), and runs the agent command with its stdio untouched (ACP flows through).
Standard library only: it runs under whatever ``python3`` the sandbox has.

Usage: python3 forward.py PORT SOCKET -- COMMAND...
"""

from __future__ import annotations

import asyncio
import contextlib
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def _relay(
    socket_path: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        up_reader, up_writer = await asyncio.open_unix_connection(socket_path)
    except OSError:
        writer.close()
        return
    await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: forward.py PORT SOCKET -- COMMAND...\n")
        return 2
    port, socket_path, command = int(argv[0]), argv[1], argv[3:]
    server = await asyncio.start_server(lambda r, w: _relay(socket_path, r, w), "127.0.0.1", port)
    async with server:
        process = await asyncio.create_subprocess_exec(*command)
        return await process.wait()


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
