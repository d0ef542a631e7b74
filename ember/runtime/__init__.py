"""Where code runs: devices, precision, seeding, and (later) process groups and launchers."""
