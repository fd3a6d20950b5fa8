"""The records the lab scripts (and bench/gpu_run.sh) write, read from their files: one
module per record family, each loader refusing non-finite numbers and figures outside
the physical bounds (`nsightlab.specs.bounds`) with one error naming the file."""
