"""Small invoicing helpers used by the billing dashboard."""
