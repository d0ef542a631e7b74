"""Starting ember's worker processes: the zygote that forks them (`zygote.py`) and the one way a worker
dies with its parent (`zygote.die_with_parent`)."""
