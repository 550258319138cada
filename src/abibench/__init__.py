"""abibench: 32-bit vs 64-bit builds of the same software, measured honestly."""

__version__ = "0.1.0"
