"""The package version, in a module of its own at the bottom layer so any part of ember can read it
without importing the package face (`ember/__init__.py`)."""

__version__ = "0.1.0"
