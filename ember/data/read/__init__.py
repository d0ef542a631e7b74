"""Sources: one module per format. Each builds a list of ReadTasks; nothing is read until execution."""
