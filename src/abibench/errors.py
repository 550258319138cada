"""Errors that end a command with a one-line message and a documented exit code.

The message of every error names the thing that is wrong and the fix, in one line; the CLI
prints it as `abibench: error: ...` on stderr and exits with the error's code. The README's
table of exit codes is this module.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_WORKLOAD = 1  # a workload crashed, failed to build, or its output miscompared
EXIT_USAGE = 2  # bad usage or input: unknown ABI or workload, malformed profile, bad option
EXIT_HOST = 3  # this host cannot do what was asked: missing compiler, cannot run an ABI
EXIT_TIMEOUT = 4  # a sample ran past its timeout
EXIT_PACKAGE = 5  # a Debian package/version/closure cannot be had for an arch (--provenance debian)
EXIT_STORE_FULL = 6  # the results database's disk is full
EXIT_STORE_READONLY = 7  # the results database cannot be written (read-only file, dir or mount)
EXIT_STORE_CORRUPT = 8  # the results database fails SQLite's integrity check
EXIT_STORE_LOCKED = 9  # another process holds the results database locked
EXIT_STORE_UNREACHABLE = 10  # the shared (PostgreSQL) results database cannot be reached
EXIT_STORE_LOST = 11  # the results database was deleted, replaced or overwritten while written
EXIT_SYSTEM = 12  # the system refused what no other code covers: a full disk or standard output
#                   on /dev/full, too many open files (ulimit -n), a name too long, no permission
EXIT_SLOWDOWN = 13  # `--fail-on-slowdown PCT`: an ABI is significantly slower than the baseline
#                    (`--against`) by more than PCT; everything is stored and reported first
EXIT_INTERNAL = 70  # a bug in abibench (an unexpected exception): one line; ABIBENCH_DEBUG=1 for
#                     the traceback
EXIT_INTERRUPTED = 130  # Ctrl-C, SIGTERM or SIGHUP; what was measured before it is in the store
EXIT_PIPE = 141  # standard output's reader went away (`abibench runs | head -1`): no message,
#                  the code of a program killed by SIGPIPE (128 + 13), as coreutils exit there


class AbibenchError(Exception):
    """An error the user can fix; str() is the whole one-line message including the fix."""

    exit_code = EXIT_USAGE


class UsageError(AbibenchError):
    """Bad usage or input: an option's value, a file, a run id (exit 2, the base's code)."""


class ProfileError(UsageError):
    """A workload profile that cannot be used as written; the message starts with file:line."""


class HostError(AbibenchError):
    """This host lacks something the request needs: a compiler, a package, a kernel feature."""

    exit_code = EXIT_HOST


class BuildError(AbibenchError):
    exit_code = EXIT_WORKLOAD


class AbiMismatchError(BuildError):
    """An artifact is not of the ABI it was built for: comparing it would compare the wrong
    binaries, so it is an error and never a result."""


class StoreError(AbibenchError):
    """The results database cannot do what was asked; what is already stored is kept."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class StoreUnreachable(StoreError):
    """The shared results database cannot be reached (no server, or the connection broke): a
    run goes on into its local spool; a command that only reads or uploads ends (exit 10)."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message, EXIT_STORE_UNREACHABLE)
        # What happened, without the advice: for a message that gives its own (the spool's).
        self.reason = reason or message


class StoreLost(StoreError):
    """The results database this process writes was deleted, replaced or overwritten under it:
    what it commits no longer reaches the file at its path (exit 11). A run goes on into a
    recovery file (store/spool.py) that holds every record of the run."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message, EXIT_STORE_LOST)
        self.reason = reason or message
