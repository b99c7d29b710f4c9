"""The web dashboard (``gridbench serve``): the same results store and runner as the CLI."""
