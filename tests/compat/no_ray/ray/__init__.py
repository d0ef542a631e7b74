"""Put this folder first on PYTHONPATH to run a process as if Ray were not installed
(tests/compat/test_runner.py)."""

raise ImportError("Ray is hidden in this process (tests/compat/no_ray): run as if it were not installed")
