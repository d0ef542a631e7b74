"""``python -m ember script.py [args]``: run an unmodified
Lightning / Ray script on ember (docs/runner.md)."""

from ember.runner import main

if __name__ == "__main__":
    main()
