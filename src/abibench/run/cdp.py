"""Just enough of the Chrome DevTools Protocol to run one page and read what it left.

A browser started with ``--remote-debugging-port=0 --user-data-dir=DIR`` writes the port it
chose and its endpoint's path to ``DIR/DevToolsActivePort``; one websocket to that endpoint
carries every command. The page target is attached in flat mode (each command names its
session), navigated, and its result is read with ``Runtime.evaluate``: a page of ours signals
completion itself (pages/harness.js), so nothing is scraped from the screen.

The websocket is opened without a proxy (the library would honour proxy variables, and the
browser is on 127.0.0.1), without compression (CPU beside the measurement), without pings (a
busy browser is not a dead one) and without a size limit (a result may exceed 1 MiB).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import cast

from websockets.exceptions import ConnectionClosed, InvalidHandshake
from websockets.sync.client import ClientConnection, connect

from ..records import JSON, JSONDict

# Resolves with the page's result as JSON text once pages/harness.js says it is done.
WAIT_FOR_RESULT = """new Promise((resolve) => {
  const done = () => resolve(JSON.stringify(window.__abibench_result));
  if (window.__abibench_done) done(); else window.addEventListener('abibench-done', done);
})"""
CRASHES = ("Inspector.targetCrashed", "Target.targetCrashed", "Target.detachedFromTarget")
POLL_S = 0.25  # how often a wait looks whether it was cancelled


class CdpError(RuntimeError):
    """A protocol error, a page that crashed or failed to load, a closed browser, a timeout."""


class Cancelled(CdpError):
    """The sample ended (the browser exited) while the driver was still waiting."""


@dataclass(frozen=True)
class Endpoint:
    port: int
    path: str  # /devtools/browser/<id>

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}{self.path}"


def parse_active_port(text: str) -> Endpoint | None:
    """DevToolsActivePort: the port, then the browser endpoint's path; None while incomplete."""
    lines = text.splitlines()
    if len(lines) < 2 or not lines[0].strip().isdigit() or \
            not lines[1].startswith("/devtools/browser/"):
        return None
    port = int(lines[0])
    return Endpoint(port, lines[1].strip()) if 0 < port < 65536 else None


def wait_for_endpoint(user_data_dir: Path, deadline: float, cancel: threading.Event) -> Endpoint:
    """The endpoint once the browser has written it (polled: it appears once, at start-up)."""
    path = user_data_dir / "DevToolsActivePort"
    while True:
        try:
            found = parse_active_port(path.read_text())
            if found is not None:
                return found
        except OSError:
            pass
        if cancel.is_set():
            raise Cancelled("the browser ended before it opened its DevTools port")
        if time.monotonic() > deadline:
            raise CdpError(f"the browser wrote no DevToolsActivePort in {user_data_dir}")
        cancel.wait(0.02)


class Session:
    """One websocket to the browser; call() sends a command and returns its result."""

    def __init__(self, endpoint: Endpoint, deadline: float, cancel: threading.Event) -> None:
        self.deadline = deadline
        self.cancel = cancel
        self.next_id = 0
        self.exceptions: list[str] = []  # the page's uncaught exceptions, for the error text
        try:
            self.ws: ClientConnection = connect(
                endpoint.url, proxy=None, compression=None, max_size=None, ping_interval=None,
                open_timeout=max(1.0, min(30.0, deadline - time.monotonic())))
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            raise CdpError(f"cannot connect to the browser's DevTools at {endpoint.url}: "
                           f"{exc}") from None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.ws.close()

    def _receive(self) -> JSONDict:
        while True:
            if self.cancel.is_set():
                raise Cancelled("the browser ended while its page was running")
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise CdpError("the page did not finish in time")
            try:
                text = self.ws.recv(timeout=min(POLL_S, left))
            except TimeoutError:
                continue
            except ConnectionClosed:
                raise CdpError("the browser closed its DevTools connection (it exited or "
                               "crashed)") from None
            message = json.loads(text)
            if isinstance(message, dict):
                return cast(JSONDict, message)

    def _event(self, message: JSONDict, session: str | None) -> None:
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "Runtime.exceptionThrown" and len(self.exceptions) < 20:
            details = params.get("exceptionDetails")
            text = details.get("text") if isinstance(details, dict) else None
            self.exceptions.append(str(text)[:300])
        if method in CRASHES and (session is None or message.get("sessionId") == session
                                  or params.get("sessionId") == session):
            raise CdpError(f"the page crashed ({method})")

    def call(self, method: str, params: Mapping[str, JSON] | None = None,
             session: str | None = None, wait_for: str | None = None) -> JSONDict:
        """Send a command; its result. With `wait_for`, also wait for that event (after the
        reply) and return the event's parameters instead."""
        self.next_id += 1
        ident = self.next_id
        message: JSONDict = {"id": ident, "method": method, "params": dict(params or {})}
        if session is not None:
            message["sessionId"] = session
        try:
            self.ws.send(json.dumps(message))
        except ConnectionClosed:
            raise CdpError("the browser closed its DevTools connection") from None
        result: JSONDict | None = None
        event: JSONDict | None = None  # the awaited event may come before the reply
        while True:
            got = self._receive()
            if got.get("id") == ident:
                error = got.get("error")
                if isinstance(error, dict):
                    raise CdpError(f"{method}: {error.get('message')}")
                value = got.get("result")
                result = value if isinstance(value, dict) else {}
                # A failed navigation has nothing more to wait for.
                if wait_for is None or result.get("errorText"):
                    return result
            else:
                self._event(got, session)
                if wait_for is not None and got.get("method") == wait_for and \
                        got.get("sessionId") == session:
                    params_ = got.get("params")
                    event = params_ if isinstance(params_, dict) else {}
            if result is not None and event is not None:
                return {**event, **result}


def run_page(session: Session, url: str) -> JSONDict:
    """Open `url` in the browser's page and return the result it leaves (pages/harness.js)."""
    targets = session.call("Target.getTargets").get("targetInfos")
    pages = [t for t in (targets if isinstance(targets, list) else [])
             if isinstance(t, dict) and t.get("type") == "page"]
    if pages:
        target = str(pages[0].get("targetId"))
    else:
        target = str(session.call("Target.createTarget", {"url": "about:blank"})["targetId"])
    sid = str(session.call("Target.attachToTarget", {"targetId": target, "flatten": True})
              ["sessionId"])
    session.call("Page.enable", session=sid)
    session.call("Runtime.enable", session=sid)
    nav = session.call("Page.navigate", {"url": url}, sid, wait_for="Page.loadEventFired")
    if nav.get("errorText"):
        raise CdpError(f"cannot load {url}: {nav['errorText']}")
    reply = session.call("Runtime.evaluate", {"expression": WAIT_FOR_RESULT,
                                              "awaitPromise": True, "returnByValue": True}, sid)
    thrown = reply.get("exceptionDetails")
    if isinstance(thrown, dict):
        raise CdpError(f"the page's result could not be read: {thrown.get('text')}")
    value = reply.get("result")
    text = value.get("value") if isinstance(value, dict) else None
    if not isinstance(text, str):
        raise CdpError("the page signalled completion without a result")
    result = json.loads(text)
    if not isinstance(result, dict):
        raise CdpError("the page's result is not an object")
    return cast(JSONDict, result)


def close_browser(session: Session) -> None:
    """Ask the browser to exit (it may close the connection before it replies)."""
    with contextlib.suppress(CdpError):
        session.call("Browser.close")
