"""The version of biaslab: the package root, config.json's ``versions`` and ``biaslab data fetch``'s
User-Agent take it from here (a module of its own: read without importing the package root)."""

__version__ = "0.2.0"
