"""The shell: the command line, its arguments and subcommands, the reports they print, the
screenshots."""
