"""One module per ``k3tui`` subcommand (``HELP``, ``add_arguments``, ``run``)."""
