"""Temperature helpers for the greenhouse sensors."""
