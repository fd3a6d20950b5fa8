"""The only code that talks to a Kubernetes API server or imports `kubernetes`:
kubeconfig, the safety guard, the client seam, explore, the lab pod, copy, shell and
doctor's API checks."""
