"""Store: results kept durably (SQLite), and run documents exported and imported as JSON."""
