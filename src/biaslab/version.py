"""The version of biaslab (the package root and config.json take it from here)."""

__version__ = "0.2.0"
