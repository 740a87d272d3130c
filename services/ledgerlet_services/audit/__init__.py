"""The decision audit: read-only queries over the event store, and the HTTP API on them."""
