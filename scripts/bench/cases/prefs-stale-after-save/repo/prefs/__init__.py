"""Per-user settings stored as JSON files."""
