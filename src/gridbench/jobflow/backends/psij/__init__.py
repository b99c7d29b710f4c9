"""The psij backend: ``backend.py`` is the class gridbench registers; the other modules
are its data and parsing."""
