//! The manifest stormark writes in every run directory: the files it made there, their sizes
//! and identities. `--reuse` and the journal's cleanup after a crash read it; nothing else in
//! a run directory is trusted.

use std::io::Read;

use serde::{Deserialize, Serialize};
use stormark_engine::Dir;

/// Name of the manifest stormark writes in every run directory: the files it created, their
/// sizes, identities and whether they hold data. `--reuse` reads it; nothing else is trusted.
pub const MANIFEST: &str = ".stormark-run.json";

/// The most a manifest may hold (a million files fit well within it).
pub(super) const MANIFEST_LIMIT: u64 = 256 << 20;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(super) struct Manifest {
    pub tool: String,
    pub files: Vec<ManifestFile>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(super) struct ManifestFile {
    pub name: String,
    pub size: u64,
    pub prepared: bool,
    /// `st_dev` and `st_ino` when created: a file under this name that is another inode is
    /// not this run's and is never written. Absent in manifests of older versions.
    #[serde(default)]
    pub dev: Option<u64>,
    #[serde(default)]
    pub ino: Option<u64>,
}

/// Why a run directory's manifest cannot be used.
#[derive(Debug)]
pub(super) enum ManifestError {
    /// There is none (or it is not a regular file): not a stormark run directory.
    Missing,
    /// Larger than any manifest stormark writes.
    TooLarge,
    /// Reading it failed.
    Unreadable(std::io::Error),
    /// Not a manifest.
    Damaged(serde_json::Error),
}

/// Reads the manifest of a run directory held open: beneath its descriptor, never through a
/// link, and at most [`MANIFEST_LIMIT`] bytes.
pub(super) fn read_manifest(run: &Dir) -> Result<Manifest, ManifestError> {
    let file = run
        .open_file(MANIFEST, libc::O_RDONLY)
        .map_err(|_| ManifestError::Missing)?;
    let mut text = String::new();
    file.take(MANIFEST_LIMIT + 1)
        .read_to_string(&mut text)
        .map_err(ManifestError::Unreadable)?;
    if text.len() as u64 > MANIFEST_LIMIT {
        return Err(ManifestError::TooLarge);
    }
    serde_json::from_str(&text).map_err(ManifestError::Damaged)
}

/// The names of the files a run directory's manifest lists (what a run made there).
pub(super) fn listed_files(run: &Dir) -> Result<Vec<String>, ManifestError> {
    Ok(read_manifest(run)?
        .files
        .into_iter()
        .map(|f| f.name)
        .collect())
}
