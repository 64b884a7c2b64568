"""The composition root and what it reads: the runtime, its wiring, the gauge and usage
readings, the context report."""
