"""User accounts."""
