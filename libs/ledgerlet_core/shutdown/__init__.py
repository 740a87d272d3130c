"""Node shutdown: the kubelet's graceful shutdown plan, and the controllers that clean
up after a node that went away (node lifecycle, taint eviction, PodGC, attach-detach)."""
