import tomlet as toml_impl

__all__ = ["toml_impl"]
