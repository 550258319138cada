"""Obtain: each workload's program per ABI, built from source or taken from Debian's binaries,
and the inputs it reads."""
