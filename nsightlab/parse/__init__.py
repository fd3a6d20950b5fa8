"""Pure readers: Nsight Systems, Nsight Compute and Kineto outputs (text, CSV, JSON, SQLite)
into typed records, kernel names, and the records the lab scripts write (`records/`). No
I/O beyond reading the file a function is handed."""
