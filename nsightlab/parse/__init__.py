"""Pure readers: Nsight Systems, Nsight Compute and Kineto outputs (text, CSV, JSON) into
typed records, and kernel names. No I/O beyond reading the file a function is handed."""
