"""The default profile's filter and score plugins, one module each, each holding its
per-node form and its all-nodes form side by side (:mod:`.base`)."""
