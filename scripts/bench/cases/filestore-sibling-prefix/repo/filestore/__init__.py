"""Serve user files from a storage folder."""
