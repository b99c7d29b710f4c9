"""gridbench: evaluate distributed computing infrastructure as its users experience it."""

__version__ = "0.1.0"
