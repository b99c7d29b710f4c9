"""The results store: one directory per experiment, and a catalogue over them."""
