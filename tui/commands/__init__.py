"""The command layer: slash commands as frozen effects, shared by every front end, drawn by none."""
