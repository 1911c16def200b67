"""Journey planning on the tram network."""
