"""Stock levels."""


def reorder_needed(on_hand, reserved, minimum):
    """Whether to reorder: when what is free (on hand, less reserved) is below minimum."""
    return on_hand < minimum
