"""Invoices for the shop."""
