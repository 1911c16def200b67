from .stats import average_word_length, reading_time_minutes, word_count, words

__all__ = ["average_word_length", "reading_time_minutes", "word_count", "words"]
