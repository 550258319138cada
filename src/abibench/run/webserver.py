"""A static HTTP server on loopback for a browser sample: abibench's pages and vendored files.

The server is a process of its own (``python -m abibench.run.webserver``), started for one sample
and stopped by its PID, on every path: it listens on 127.0.0.1 and a port the kernel picks
(announced on its first line of output), serves only files inside the directories it is given,
tells the browser not to cache anything (every sample loads its page afresh), and dies with
abibench (PR_SET_PDEATHSIG) even when abibench is killed with SIGKILL.

    with StaticServer({"": PAGES_DIR, "vendor/octane": octane_dir}) as web:
        url = web.url("dom/index.html?n=1000")
"""

from __future__ import annotations

import contextlib
import ctypes
import mimetypes
import os
import select
import signal
import subprocess
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import ClassVar

from ..errors import EXIT_WORKLOAD, AbibenchError

LOOPBACK = "127.0.0.1"
PR_SET_PDEATHSIG = 1
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 5.0
TYPES = {".js": "text/javascript", ".html": "text/html", ".css": "text/css",
         ".json": "application/json", ".svg": "image/svg+xml"}


class WebServerError(AbibenchError):
    exit_code = EXIT_WORKLOAD


def _mounts(args: list[str]) -> dict[str, Path]:
    """PREFIX=DIR arguments: URL path prefix (no slashes at either end) -> directory."""
    out: dict[str, Path] = {}
    for arg in args:
        prefix, sep, directory = arg.partition("=")
        if not sep:
            raise ValueError(f"expected PREFIX=DIR, got {arg!r}")
        out[prefix.strip("/")] = Path(directory).resolve()
    return out


def resolve(mounts: dict[str, Path], url_path: str) -> Path | None:
    """The file a URL path names, or None: the longest matching prefix, and never a file
    outside its directory (no '..', no symlink out)."""
    path = urllib.parse.unquote(url_path.split("?", 1)[0].split("#", 1)[0]).lstrip("/")
    for prefix in sorted(mounts, key=len, reverse=True):
        if prefix and path != prefix and not path.startswith(prefix + "/"):
            continue
        rest = path[len(prefix):].lstrip("/")
        root = mounts[prefix]
        found = (root / rest).resolve()
        if found != root and root not in found.parents:
            return None
        return found if found.is_file() else None
    return None


class _Handler(BaseHTTPRequestHandler):
    mounts: ClassVar[dict[str, Path]] = {}
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # the name http.server calls
        found = resolve(self.mounts, self.path)
        if found is None:
            self.send_error(404)
            return
        data = found.read_bytes()
        kind = TYPES.get(found.suffix) or mimetypes.guess_type(found.name)[0] or \
            "application/octet-stream"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass  # nothing on the terminal


def serve(mounts: dict[str, Path]) -> None:
    """Serve until SIGTERM; the port is the first line of output."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    _Handler.mounts = mounts
    server = ThreadingHTTPServer((LOOPBACK, 0), _Handler)
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


class StaticServer:
    """The server process for one sample; stopped by its PID when the context ends."""

    def __init__(self, mounts: dict[str, Path]) -> None:
        self.mounts = mounts
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    def url(self, path: str) -> str:
        return f"http://{LOOPBACK}:{self.port}/{path.lstrip('/')}"

    def __enter__(self) -> StaticServer:
        args = [f"{prefix}={d}" for prefix, d in self.mounts.items()]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "abibench.run.webserver", *args], stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            self.port = self._port()
        except BaseException:
            self.stop()
            raise
        return self

    def _port(self) -> int:
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], START_TIMEOUT_S)
        line = self.proc.stdout.readline().decode(errors="replace") if ready else ""
        if not line.startswith("PORT "):
            err = self.proc.stderr.read(2000).decode(errors="replace") \
                if self.proc.stderr and self.proc.poll() is not None else ""
            raise WebServerError(f"the HTTP server for the browser did not start: "
                                 f"{(err.strip().splitlines() or ['no output'])[-1]}")
        return int(line.split()[1])

    def stop(self) -> None:
        """SIGTERM to its PID, SIGKILL to its process group after the deadline, then reaped."""
        proc = self.proc
        if proc is None:
            return
        self.proc = None
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(STOP_TIMEOUT_S)
        if proc.poll() is None:
            # Still unreaped, so the group's ID is still its own.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


if __name__ == "__main__":
    serve(_mounts(sys.argv[1:]))
