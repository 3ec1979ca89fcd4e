"""Where nearline's files go: every output path, closed-set markers, migration to the archive."""

from __future__ import annotations

from nearline.layout.events import MigrationEvent, Phase
from nearline.layout.manifest import BundleKind
from nearline.layout.markers import (
    MARKER,
    FileSet,
    Member,
    closed_sets,
    mark_complete,
    marker_path,
    read_marker,
)
from nearline.layout.migrate import Migrator
from nearline.layout.paths import Layout, OutputPath, hds_path, parse
from nearline.layout.restore import (
    manifests,
    read_manifest,
    restore,
    restore_member,
    verify_archive,
)
from nearline.layout.tier_base import ArchiveTier
from nearline.layout.tier_s3 import S3Tier  # boto3 is imported only when one is made

__all__ = [
    "MARKER",
    "ArchiveTier",
    "BundleKind",
    "FileSet",
    "Layout",
    "Member",
    "MigrationEvent",
    "Migrator",
    "OutputPath",
    "Phase",
    "S3Tier",
    "closed_sets",
    "hds_path",
    "manifests",
    "mark_complete",
    "marker_path",
    "parse",
    "read_manifest",
    "read_marker",
    "restore",
    "restore_member",
    "verify_archive",
]
