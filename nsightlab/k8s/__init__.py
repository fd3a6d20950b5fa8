"""Pure views of Kubernetes objects: what the API server's nodes, pods, events and
workloads say (GPUs held and free, the lab pod's state, doctor's checks), as typed
results. Takes the objects `cluster/` fetched; never talks to a server."""
