"""Holiday-flat booking helpers."""
