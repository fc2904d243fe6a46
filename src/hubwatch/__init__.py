"""hubwatch: watch model repositories revision by revision and say what changed."""

from hubwatch.errors import HubwatchError
from hubwatch.models import CommitInfo, CommitSha, FileEntry, RepoRef, SourceKind

__version__ = "0.1.0"

__all__ = [
    "CommitInfo",
    "CommitSha",
    "FileEntry",
    "HubwatchError",
    "RepoRef",
    "SourceKind",
    "__version__",
]
