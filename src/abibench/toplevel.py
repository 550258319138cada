"""Every error is one line: what ends a command, whatever raised it.

`guarded` runs the whole command line (parsing, the command, the last flush of standard
output). An AbibenchError is already one line with its own code. Anything else that escapes a
command becomes one `abibench: error:` line too, with a code of its own family (errors.py):

* the system refused (an OSError: a full disk, too many open files, a name too long, no
  permission, standard output on /dev/full): EXIT_SYSTEM, the error and what to do;
* standard output closed by its reader (`abibench runs | head -1`): no message at all, exit
  EXIT_PIPE, as a program killed by SIGPIPE would;
* a NUL byte in a file name (Python's ValueError): bad input, EXIT_USAGE;
* anything else is a bug in abibench: EXIT_INTERNAL, one line naming it.

With ABIBENCH_DEBUG=1 in the environment the traceback is shown instead (for developers).
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import sys
from collections.abc import Callable
from typing import Any

from .errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_PIPE,
    EXIT_SYSTEM,
    EXIT_USAGE,
    AbibenchError,
)
from .text import one_line

DEBUG_ENV = "ABIBENCH_DEBUG"

# What to do, per errno, after the system's own words.
_ADVICE = {
    errno.ENOSPC: "free space on that filesystem or write somewhere else",
    errno.EDQUOT: "free space within your quota or write somewhere else",
    errno.EMFILE: "raise the limit of open files (ulimit -n 1024) and run it again",
    errno.ENFILE: "the system has too many files open: close some programs and run it again",
    errno.ENAMETOOLONG: "choose a shorter path",
    errno.EACCES: "choose a path you may write, or fix its permissions",
    errno.EPERM: "choose a path you may write, or fix its permissions",
    errno.EROFS: "the filesystem is read-only: choose a path on another one",
    errno.ENOMEM: "free memory and run it again",
    errno.EIO: "the device failed: check it (dmesg) and run it again",
}


class _StdoutFailed(Exception):
    """Flushing standard output failed: the OSError is its cause."""


def _debug() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def _say(line: str) -> None:
    """One line on stderr; nothing when stderr itself is gone (nowhere left to say it)."""
    try:
        sys.stderr.write(one_line(f"abibench: error: {line}") + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _stdout_reader_gone() -> bool:
    """Whether standard output is a pipe or socket whose reader has closed it."""
    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(ev & select.POLLERR for _, ev in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def _drop_stdout() -> None:
    """Standard output cannot be written: point it at /dev/null, so that the interpreter's own
    flush at exit finds nothing to fail on (and prints no second message)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass


class _Watched:
    """Standard output, whose failures say that they are standard output's (a print to a full
    /dev/full raises an OSError with no file name in it)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            written: int = self._stream.write(text)
        except OSError as exc:
            raise _StdoutFailed() from exc
        return written

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise _StdoutFailed() from exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def system_message(exc: OSError, where: str | None = None) -> str:
    """One line for an OSError: what failed, on which file, and what to do."""
    what = exc.strerror or str(exc) or type(exc).__name__
    on = where or (f"{exc.filename}" if exc.filename is not None else None)
    advice = _ADVICE.get(exc.errno or 0)
    return f"{what}{f' ({on})' if on else ''}" + (f": {advice}" if advice else "")


def _exit_code(code: object) -> int:
    """sys.exit's argument as an exit code (argparse: --help, --version, a usage error)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    _say(str(code))
    return 1


def _standard_streams() -> None:
    """A closed standard descriptor (`abibench runs >&-`) is /dev/null: otherwise the next file
    opened would take its number, and what is printed would land in it (the database)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free number: fd itself
            if null != fd:
                os.close(null)
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (for the whole process)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115


def _system_failure(failure: Exception) -> int:
    cause = failure.__cause__ if isinstance(failure, _StdoutFailed) else failure
    assert isinstance(cause, OSError)
    if cause.errno == errno.EPIPE and _stdout_reader_gone():
        _drop_stdout()  # like `yes | head -1`: the reader has what it wanted
        return EXIT_PIPE
    if isinstance(failure, _StdoutFailed):
        _drop_stdout()
        _say(f"cannot write standard output: {system_message(cause, 'stdout')}")
    else:
        _say(system_message(cause))
    return EXIT_SYSTEM


def guarded(command: Callable[[], int]) -> int:
    """Run `command` (a whole command line) and return its exit code; every failure is one
    line on stderr and a code of errors.py, never a traceback (unless ABIBENCH_DEBUG)."""
    _standard_streams()
    stdout = sys.stdout
    sys.stdout = _Watched(stdout)
    try:
        return _outcome(command)
    finally:
        sys.stdout = stdout


def _outcome(command: Callable[[], int]) -> int:
    try:
        try:
            code = command()
        except SystemExit as exc:
            code = _exit_code(exc.code)
        sys.stdout.flush()
        return code
    except AbibenchError as exc:
        _say(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        with contextlib.suppress(OSError, ValueError):
            print("abibench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (_StdoutFailed, OSError) as failure:
        if _debug() and not _stdout_reader_gone():
            raise
        return _system_failure(failure)
    except ValueError as exc:
        if _debug():
            raise
        if "null byte" in str(exc):
            _say("a file name holds a NUL byte: remove it from the profile, file or option "
                 "that gave it")
            return EXIT_USAGE
        _say(f"internal error: ValueError: {str(exc)[:300]} (a bug in abibench: run it again "
             f"with {DEBUG_ENV}=1 for the traceback, and report it)")
        return EXIT_INTERNAL
    except Exception as exc:
        if _debug():
            raise
        _say(f"internal error: {type(exc).__name__}: {str(exc)[:300]} (a bug in abibench: run "
             f"it again with {DEBUG_ENV}=1 for the traceback, and report it)")
        return EXIT_INTERNAL
