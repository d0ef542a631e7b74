"""`python -m ember.cli ...` is the `ember` command."""

from ember.cli import main

main()
