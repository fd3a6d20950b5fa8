"""What a CUDA or HIP runtime / driver API call does to the host, told by its name.

A step's anatomy needs three kinds of host call beside the launches
(`names.puts_work_on_gpu`):

- synchronisations, which block the host until the GPU has done something:
  `cudaStreamSynchronize`, `cudaDeviceSynchronize`, `cudaEventSynchronize`,
  `cuStreamSynchronize`, `cuCtxSynchronize`, their `hip*` twins; and the copies that
  block the host until they are done: the memcpy calls without `Async`
  (`cudaMemcpy`, `cuMemcpyDtoH_v2`, `hipMemcpy`, `hipMemcpyWithStream`);
- graph launches (`cudaGraphLaunch`, `cuGraphLaunch`, `hipGraphLaunch`): one call, one
  correlation id, every kernel of the graph.

Pure string functions.
"""

from __future__ import annotations

import functools
import re

# A call that blocks the host until the GPU reaches a point has this in its name.
SYNC_CALL_MARKS = ("Synchronize",)
# The copies queued by these names block the host until they are done (no `Async`).
_COPY_MARKS = ("Memcpy", "memcpy")


@functools.lru_cache(maxsize=1024)
def is_blocking_copy(name: str) -> bool:
    """A memcpy call that returns when the copy is done (`cudaMemcpy`, `hipMemcpyWithStream`,
    `cuMemcpyDtoH_v2`); the `...Async` calls return at once."""
    return any(mark in name for mark in _COPY_MARKS) and "Async" not in name


@functools.lru_cache(maxsize=1024)
def is_sync_call(name: str) -> bool:
    """A call that holds the host until the GPU has caught up: a `*Synchronize` call, or a
    blocking copy."""
    return any(mark in name for mark in SYNC_CALL_MARKS) or is_blocking_copy(name)


# A call that launches kernels: cudaLaunchKernel(ExC), cuLaunchKernel(Ex), the cooperative
# launches, graph launches (and their hip* twins).
_KERNEL_LAUNCH = re.compile(r"Launch(Cooperative)?Kernel|GraphLaunch|cuLaunchGrid")


@functools.lru_cache(maxsize=1024)
def is_kernel_launch(name: str) -> bool:
    """A call that launches kernels or a graph (not a copy, a set or a host function)."""
    return _KERNEL_LAUNCH.search(name) is not None


@functools.lru_cache(maxsize=1024)
def is_graph_launch(name: str) -> bool:
    """`cudaGraphLaunch`, `cuGraphLaunch`, `hipGraphLaunch` (and their `_ptsz` forms)."""
    return "GraphLaunch" in name
