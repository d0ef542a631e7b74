"""Ray's ``ray.data.datasource`` names ember implements, at the matching import path, so that
``from ray.data.datasource import FilenameProvider`` becomes ``from ember.data.datasource import ...``.

Example:
    >>> from ember.data.datasource import Datasink, FilenameProvider, WriteResult
    >>> FilenameProvider(file_format="json").get_filename_for_task("w", 0)
    'w_000000.json'
"""

from ember.data.datasink import Datasink, TaskContext, WriteResult
from ember.data.filename_provider import FilenameProvider

__all__ = ["Datasink", "FilenameProvider", "TaskContext", "WriteResult"]
