"""A tiny note-taking library."""
