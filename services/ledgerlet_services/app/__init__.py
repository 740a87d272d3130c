"""The command line: running scenarios and services, and the post-mortem tools."""
