from .format import format_money, parse_money

__all__ = ["format_money", "parse_money"]
