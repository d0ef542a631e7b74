"""``cli_lightning_logo()``: the banner Lightning's example
scripts print first; ember prints its own one line."""

from __future__ import annotations


def cli_lightning_logo() -> None:
    """Print ember's banner (Lightning's scripts call this at start; it changes nothing else).

    Example:
        >>> cli_lightning_logo()  # doctest: +ELLIPSIS
        ember ...
    """
    from ember.version import __version__

    print(f"ember {__version__}")
