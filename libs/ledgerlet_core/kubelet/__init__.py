"""The kubelet: node-pressure eviction, its pod admission and pod worker, node status, image GC, graceful shutdown."""
