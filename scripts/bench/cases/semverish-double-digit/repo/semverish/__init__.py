"""Compare dotted version numbers."""
