"""Probe: what this host is and what it can build and run for each ABI."""
