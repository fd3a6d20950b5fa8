"""What the hardware is: the GPU spec table and the tutorial's reference curves, MIG
profiles, and the physical bounds no measurement can pass. Every layer may read it."""
