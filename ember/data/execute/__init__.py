"""Execution of Dataset plans: the worker pool and the local streaming executor."""
