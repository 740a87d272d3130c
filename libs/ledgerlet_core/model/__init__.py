"""Kubernetes objects, and the quantities, durations and stats APIs they are written in:
the data everything else reads."""
