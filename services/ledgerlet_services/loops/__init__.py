"""The control loops: consume, fold the cluster view, call the core, emit."""
