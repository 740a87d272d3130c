"""The cluster as every control loop sees it: one pure fold of what exists."""
