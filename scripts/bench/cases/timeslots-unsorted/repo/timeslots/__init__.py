"""Working with time slots (start, end) in minutes."""
