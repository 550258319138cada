"""Errors that end a command with a one-line message and a documented exit code."""

from __future__ import annotations

# Exit codes (README documents them; tests assert them).
EXIT_OK = 0
EXIT_WORKLOAD = 1  # a workload crashed, failed to build, or its output miscompared
EXIT_USAGE = 2  # bad usage or input: unknown ABI or workload, malformed profile, bad option
EXIT_HOST = 3  # this host cannot do what was asked: missing compiler, cannot run an ABI
EXIT_TIMEOUT = 4  # a sample ran past its timeout
EXIT_PACKAGE = 5  # a Debian package/version/closure cannot be had for an arch (--provenance debian)
EXIT_INTERRUPTED = 130  # Ctrl-C; what was measured before it is in the store


class AbibenchError(Exception):
    """An error the user can fix; str() is the whole one-line message including the fix."""

    exit_code = EXIT_USAGE


class UsageError(AbibenchError):
    exit_code = EXIT_USAGE


class ProfileError(AbibenchError):
    exit_code = EXIT_USAGE


class HostError(AbibenchError):
    exit_code = EXIT_HOST


class BuildError(AbibenchError):
    exit_code = EXIT_WORKLOAD


class AbiMismatchError(AbibenchError):
    """An artifact is not of the ABI it was built for; comparing it would be comparing the wrong thing."""

    exit_code = EXIT_WORKLOAD
