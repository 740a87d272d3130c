"""The command line's subcommands, one module each (or one per group: ``service`` with
``health``); ``app/cli.py`` builds the parser from their ``add_parser`` and dispatches."""
