"""Numbers shown on a document's statistics page."""
import re

WORD_RE = re.compile(r"[\w']+")


def words(text):
    return WORD_RE.findall(text)


def word_count(text):
    return len(words(text))


def average_word_length(text):
    ws = words(text)
    return sum(len(w) for w in ws) / len(ws)


def reading_time_minutes(text, wpm=200):
    return word_count(text) / wpm
