import importlib
mod = importlib.import_module(name)
