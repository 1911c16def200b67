"""Plane geometry helpers."""
