"""Running the lab scripts on a target (the lab pod, this machine) and bringing their raw
outputs into the run store: profile, ncu, sweep, doctor's in-pod checks."""
