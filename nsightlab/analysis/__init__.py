"""Pure analysis: rates and rooflines, sweep regimes, decode floors, the GPU spec table,
and what Kubernetes objects say about GPUs and pods. Takes records, returns typed results."""
