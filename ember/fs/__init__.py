"""ember's filesystem layer: how every file ember writes reaches the disk (or an object store).

It sits at the bottom of the import graph beside `ember.errors`, so `ember.data` (which imports
nothing else from ember) and the Trainer share one implementation of atomic writes and one way of
turning a path or URL (s3://, gs://, memory://, file://, local) into a filesystem and a path.
"""

from ember.fs.append import open_for_append
from ember.fs.atomic import atomic_link, atomic_write, is_temporary, remove_stale_temporaries
from ember.fs.storage import RemotePath, is_url, local_path, readable, resolve, storage_error, storage_path

__all__ = ["open_for_append", "atomic_link", "atomic_write", "is_temporary", "remove_stale_temporaries",
           "RemotePath", "is_url", "local_path", "readable", "resolve", "storage_error", "storage_path"]
