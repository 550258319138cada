"""Run: samples of every target in interleaved rounds, each stored the moment it exists."""
