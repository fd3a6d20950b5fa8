"""nsightlab: a lab driver for GPU profiling on Kubernetes."""

from __future__ import annotations

__version__ = "0.1.0"
