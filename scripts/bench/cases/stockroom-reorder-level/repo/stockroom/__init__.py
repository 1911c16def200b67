"""Office supplies stock keeping."""
