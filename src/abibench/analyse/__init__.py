"""Analyse: from stored samples to results, verdicts, suite means and the report's content."""
