"""harvest's version, in a module of its own so that the package's __init__ and the modules that write it
(manifest.py, the CLI's --version) import it without importing each other."""

__version__ = "0.1.0"
