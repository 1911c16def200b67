from .importer import load_contacts, parse_contacts

__all__ = ["load_contacts", "parse_contacts"]
