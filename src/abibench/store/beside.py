"""A stored run's columns read by a second process while this one reads an exported file
(issue 30: `compare RUN FILE` at 10^6 samples, 34 s on one core, of which the stored side's
columns 7.7 s of CPU and the file's 10.5 s, each in one process and each alone).

`Beside(store, run_id)` forks a child that opens the SQLite file again (its own connection,
read-only: a connection is never carried across a fork) and runs `columns.queried`, the one
reader of a stored run's columns, then writes what it read to a temporary file with no name
(unlinked at once, shared by the two processes) and ends. Meanwhile this process reads the
file. `columns()` waits for the child and reads its columns back: `marshal`, one frame per
column, whose values come back of the same types, the same values, in the same order (marshal
refuses any type it does not write exactly, a subclass too), and the samples that do not count
(records) by pickle.

The child only ever hands over columns it read without an error. If it gives none (any
refusal: a damaged or non-finite stored value, a lost file, a locked database; or it died, or
could not be started), `columns()` returns None and the caller reads the run in this process
as it always did, so a refusal is the one `load_columns` gives, raised by the same code, with
the same exit code (docs/reliability.md, "A fast path gives exactly what its definition
gives"). The child dies with this process (PR_SET_PDEATHSIG, even on SIGKILL), is killed by its
PID on every other path out (`close`: an error, Ctrl-C); its file goes with the last of the two.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import pickle
import signal
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, NoReturn

from .columns import Columns, queried
from .gcpause import paused_collector
from .sqlite import Store

_LENGTH = struct.Struct("<Q")
_PR_SET_PDEATHSIG = 1


# Blocked around the fork, so that an interrupt lands before it or once the child is in
# `_LIVE` (where `started` finds it to stop it), never in between.
_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM}
_LIVE: set[Beside] = set()


@contextlib.contextmanager
def _handlers_held() -> Iterator[None]:
    """Around a fork: every handler of `_SIGNALS` only notes its signal, and once the fork is
    done the noted signals are raised again, in our code, for the handlers of before.

    Why: os.fork runs Python's at-fork hooks (logging's lock), and a handler that raises there
    (Ctrl-C's KeyboardInterrupt) is printed as "Exception ignored" and lost. Blocking the
    signals in this thread is not enough: another thread of the process (pytest-xdist's, a
    library's) can take a process-directed signal, and this thread then runs the handler at
    its next check, which can be inside the hook. A handler that only notes cannot be lost.
    Handlers can be set only from the main thread; elsewhere nothing is held (and no handler
    of ours runs in that thread)."""
    noted: list[int] = []

    def note(signum: int, _frame: Any) -> None:
        noted.append(signum)

    # A signal that came before this point has had its handler run already, in our code:
    # CPython runs pending handlers at a Python function's start, and this is one.
    try:
        before = {sig: signal.signal(sig, note) for sig in _SIGNALS}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        for signum in dict.fromkeys(noted):  # each once, in the order they came
            signal.raise_signal(signum)


class Beside:
    """A stored run's `queried` columns being read by a child process (see the module)."""

    def __init__(self, store: Store, run_id: str) -> None:
        self.pid: int | None = None
        # A file with no name (unlinked at once): it goes with the last process holding it,
        # even when both are SIGKILLed. The child writes through the same open file.
        self._file = tempfile.TemporaryFile(prefix="abibench-beside-")  # noqa: SIM115 - closed by close()
        parent, prctl = os.getpid(), _prctl()
        with _handlers_held():
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
            try:
                pid = os.fork()
                if pid == 0:
                    _child(store.path, run_id, self._file.fileno(), (parent, prctl), mask)
                self.pid = pid
            except BaseException:
                self._file.close()
                raise
            finally:
                _LIVE.add(self)
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def columns(self) -> Columns | None:
        """The child's columns, or None when it gave none (the caller then reads them)."""
        try:
            if self.pid is None:
                return None
            _, status = os.waitpid(self.pid, 0)  # an interrupt here: `close` kills it
            self.pid = None
            if os.waitstatus_to_exitcode(status) != 0:
                return None
            self._file.seek(0)  # the offset the child's writes moved
            return _read(self._file)
        except Exception:  # its file unreadable, or the child not ours to wait for: no columns
            return None  # (the caller reads the run itself, so the answer is the same)
        finally:
            self.close()

    def close(self) -> None:
        """Kill the child if it still runs (by its PID), reap it, close its file."""
        pid, self.pid = self.pid, None
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        self._file.close()
        _LIVE.discard(self)


@contextlib.contextmanager
def started() -> Iterator[None]:
    """Every child started inside is stopped on the way out, however it is left (an error,
    Ctrl-C): one that gave its columns is closed already."""
    before = set(_LIVE)
    try:
        yield
    finally:
        for b in list(_LIVE - before):
            b.close()


def _child(path: Path, run_id: str, out: int, parent: tuple[int, Any],
           mask: set[int | signal.Signals],
           ) -> NoReturn:
    """The child: read, write, end; it never returns into the caller's code (os._exit on every
    path, so no `finally` or exit handler of the parent's runs twice)."""
    code = 1
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)  # ended by a signal: the parent cleans up
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _die_with(*parent)
        store = Store(path, readonly=True)
        with paused_collector():
            cols = queried(store, run_id)
            with open(out, "wb", closefd=False) as f:
                _write(cols, f)
        code = 0
    except BaseException:  # the parent reads the run itself, and refuses it as ever
        code = 1
    finally:
        os._exit(code)


def _prctl() -> Any:
    """libc's prctl, found before the fork: the child loads no library (a lock another
    thread of the parent held at the fork, as a test runner's has, would never be released)."""
    import ctypes  # here: a command that reads no run beside a file does not load it

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _die_with(parent: int, prctl: Any) -> None:
    """SIGKILL this process when the parent dies (a parent already gone: end now)."""
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _frame(f: IO[bytes], data: bytes) -> None:
    f.write(_LENGTH.pack(len(data)))
    f.write(data)


def _write(cols: Columns, f: IO[bytes]) -> None:
    """The head frame (the series, their fields, the counts), the others' records, then one
    frame per column: each a few MiB at most, so the reader holds no second copy of all."""
    keys = list(cols.groups)
    _frame(f, marshal.dumps((keys, [list(cols.groups[k]) for k in keys], cols.first,
                             cols.targets, cols.other_ids, cols.total, cols.warmup,
                             cols.failed)))
    _frame(f, pickle.dumps(cols.others, protocol=pickle.HIGHEST_PROTOCOL))
    for k in keys:
        for col in cols.groups[k].values():
            _frame(f, marshal.dumps(col))


def _next(f: IO[bytes]) -> bytes:
    head = f.read(_LENGTH.size)
    if len(head) != _LENGTH.size:
        raise OSError("the child's columns end early")
    (n,) = _LENGTH.unpack(head)
    data = f.read(n)
    if len(data) != n:
        raise OSError("the child's columns end early")
    return data


def _read(f: IO[bytes]) -> Columns:
    out = Columns()
    with paused_collector():
        keys, names, first, targets, other_ids, total, warmup, failed = marshal.loads(_next(f))
        out.others = pickle.loads(_next(f))  # our own child's, by our own unnamed file
        for k, fields in zip(keys, names, strict=True):
            group: dict[str, tuple[Any, ...]] = {}
            for name in fields:
                group[name] = marshal.loads(_next(f))
            out.groups[k] = group
        out.first = first
        out.targets, out.other_ids = targets, other_ids
        out.total, out.warmup, out.failed = total, warmup, failed
    return out
