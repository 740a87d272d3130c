"""The API server: the one authority on what exists (admission, defaulting, validation)."""
