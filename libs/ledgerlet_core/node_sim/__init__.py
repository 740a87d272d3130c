"""The simulated node: what its workloads consume (stats derived from usage) and its kernel (OOM kills, memcg)."""
