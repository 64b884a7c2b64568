"""The line front ends: the --plain REPL, headless -p, and what they share (line input, the
event printer, the terminal's state, the plain question)."""
