"""Read settings from environment variables."""
