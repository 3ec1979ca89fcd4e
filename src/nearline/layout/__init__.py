"""Where nearline's files go: every output path, closed-set markers, migration to the archive."""

from __future__ import annotations

from nearline.layout._browse import FileEntry, GroupSummary, files, groups, steps
from nearline.layout._events import MigrationEvent, Phase
from nearline.layout._manifest import BundleKind, Manifest
from nearline.layout._markers import (
    MARKER,
    FileSet,
    Member,
    closed_sets,
    mark_complete,
    marker_path,
    read_marker,
)
from nearline.layout._migrate import Migrator
from nearline.layout._paths import Layout, OutputPath, check_ext, check_name, hds_path, parse
from nearline.layout._restore import (
    manifests,
    read_manifest,
    restore,
    restore_member,
    verify_archive,
)
from nearline.layout._tier_base import ArchiveTier
from nearline.layout._tier_registry import open_tier
from nearline.layout._tier_s3 import S3Tier, split_s3_url  # boto3 is imported only when one is made

__all__ = [
    "MARKER",
    "ArchiveTier",
    "BundleKind",
    "FileEntry",
    "FileSet",
    "GroupSummary",
    "Layout",
    "Manifest",
    "Member",
    "MigrationEvent",
    "Migrator",
    "OutputPath",
    "Phase",
    "S3Tier",
    "check_ext",
    "check_name",
    "closed_sets",
    "files",
    "groups",
    "hds_path",
    "manifests",
    "mark_complete",
    "marker_path",
    "open_tier",
    "parse",
    "read_manifest",
    "read_marker",
    "restore",
    "restore_member",
    "split_s3_url",
    "steps",
    "verify_archive",
]
