"""ember's filesystem layer: the only door through which ember writes, renames, links or deletes files.

It sits at the bottom of the import graph beside `ember.errors`, so `ember.data` (which imports
nothing else from ember) and the Trainer share one implementation of atomic writes and one way of
turning a path or URL (s3://, gs://, memory://, file://, local) into a filesystem and a path.

What it guarantees (docs/safety.md, "Choke points"): names read from files and keys stay under their root
(`confined`); no write follows a planted link (`atomic_write`, `open_for_append`, `written_by`); whole
folders are deleted only below the root ember writes in (`remove_tree`) or when they are ember's own
temporary folders; one URL parser (`is_url`, `ember.fs.url`) refuses malformed URLs. A test reads ember's
source and fails on any raw write, rename, link or delete outside this package.
"""

from ember.fs.append import open_for_append
from ember.fs.atomic import atomic_link, atomic_write, is_temporary, remove_stale_temporaries
from ember.fs.changes import (
    copy_file,
    copy_tree,
    make_folders,
    make_temporary_folder,
    open_own,
    remove_file,
    remove_temporary_folder,
    remove_tree,
    rename,
    replace_with_folder,
    symlink,
    temporary_folder,
    truncate_torn_tail,
    write_bytes,
    write_text,
    written_by,
)
from ember.fs.confine import confined, refuse_link, refuse_linked_folders, within
from ember.fs.storage import RemotePath, is_url, local_path, readable, resolve, storage_error, storage_path

__all__ = [
    "open_for_append",
    "atomic_link",
    "atomic_write",
    "is_temporary",
    "remove_stale_temporaries",
    "copy_file",
    "copy_tree",
    "make_folders",
    "make_temporary_folder",
    "open_own",
    "remove_file",
    "remove_temporary_folder",
    "remove_tree",
    "rename",
    "replace_with_folder",
    "symlink",
    "temporary_folder",
    "truncate_torn_tail",
    "write_bytes",
    "write_text",
    "written_by",
    "confined",
    "refuse_link",
    "refuse_linked_folders",
    "within",
    "RemotePath",
    "is_url",
    "local_path",
    "readable",
    "resolve",
    "storage_error",
    "storage_path",
]
