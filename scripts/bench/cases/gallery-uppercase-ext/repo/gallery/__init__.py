"""Photo gallery import."""
