//! A share's run directory removed over NFS by file handle, one road for the end of a run and
//! for an agent restarted after a crash (from its journal): the directory looked up by the
//! URL's directory's handle (never through a link) and used only while it is the object the
//! run made; each file looked up in the directory held and removed there only while it is the
//! object the run made; then the directory, if empty. A name that no longer leads to the run's
//! directory (moved, or replaced by someone else's) has nothing under it touched: the run's
//! files are removed from its directory by the handle recorded, wherever it was moved, and
//! the directory, whose new name is not known, is left there.

use std::io;

use stormark_nfs::{Client, FileId, Found, Handle, Kind, Url};

use super::journal::{file_id, handle_of, unescape};
use super::share::{Made, ShareDir, CLEANUP_TIMEOUT};

/// A file the run recorded making: its name, its object and its handle where recorded (a
/// journal line of an older stormark has no handle, and one of a run killed mid-create may
/// name a file without either).
type Recorded = (String, Option<FileId>, Option<Handle>);

/// What a removal found and did.
struct Removal {
    /// Files removed: each still the object the run made.
    removed: usize,
    /// Files under the run's names that are not what it made, or could not be removed.
    others: usize,
    end: End,
}

/// How a [`Removal`] ended.
enum End {
    /// The directory is gone: removed now (`true`) or before.
    Gone(bool),
    /// Its name leads to something else, or nothing: nothing under it was touched; with a
    /// handle held (`true`), the run's files were removed from its directory by that handle.
    NotAtName(bool),
    /// Left: it holds what the run did not make.
    Holds,
    /// A call failed.
    Failed(io::Error),
}

/// Whether the server did not answer (nothing more is to be asked of it now).
fn unanswered(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINTR | libc::ETIMEDOUT | libc::ECONNRESET | libc::EPIPE | libc::ENOTCONN)
    )
}

fn is(e: &io::Error, errno: i32) -> bool {
    e.raw_os_error() == Some(errno)
}

/// Removes the run directory `name` in the directory `at`, `dir_id` the object its MKDIR
/// made, `held` its handle where recorded, and of `files` those still the objects made.
fn remove(
    client: &mut Client,
    at: &Handle,
    name: &str,
    dir_id: FileId,
    held: Option<&Handle>,
    files: &[Recorded],
) -> Removal {
    // The object made: its kind, its fsid and fileid, and its whole handle where recorded
    // (the handle carries the generation: a later object given the same number is not it).
    let ours = |f: &Found, kind, id, handle: Option<&Handle>| {
        f.kind == kind && f.id == Some(id) && handle.is_none_or(|h| *h == f.handle)
    };
    let mut r = Removal {
        removed: 0,
        others: 0,
        end: End::Holds,
    };
    let fail = |mut r: Removal, e| {
        r.end = End::Failed(e);
        r
    };
    let (under_name, gone) = match client.lookup_at(at, name) {
        Ok(f) if ours(&f, Kind::Dir, dir_id, held) => (Some(f.handle), false),
        Ok(_) => (None, false),
        Err(e) if is(&e, libc::ENOENT) => (None, true),
        Err(e) => return fail(r, e),
    };
    let mut stale = false;
    if let Some(dir) = under_name.or(held.copied()) {
        for (file, id, handle) in files {
            match (client.lookup_at(&dir, file), id) {
                (Ok(f), Some(id)) if ours(&f, Kind::File, *id, handle.as_ref()) => {
                    match client.remove_at(&dir, file) {
                        Ok(()) => r.removed += 1,
                        Err(e) if is(&e, libc::ENOENT) => {}
                        Err(e) if unanswered(&e) => return fail(r, e),
                        Err(_) => r.others += 1,
                    }
                }
                (Err(e), _) if is(&e, libc::ESTALE) => {
                    stale = true;
                    break;
                }
                (Err(e), _) if unanswered(&e) => return fail(r, e),
                (Err(_), _) => {}
                _ => r.others += 1,
            }
        }
    }
    if under_name.is_none() {
        r.end = match (held.is_some() && !stale, gone) {
            (true, _) => End::NotAtName(true),
            (false, true) => End::Gone(false),
            (false, false) => End::NotAtName(false),
        };
        return r;
    }
    if r.others > 0 {
        return r;
    }
    // Looked up again right before it goes: still the run's own.
    match client.lookup_at(at, name) {
        Ok(f) if ours(&f, Kind::Dir, dir_id, held) => {}
        Err(e) if unanswered(&e) => return fail(r, e),
        _ => {
            r.end = End::NotAtName(true);
            return r;
        }
    }
    r.end = match client.rmdir_at(at, name) {
        Ok(()) => End::Gone(true),
        Err(e) if is(&e, libc::ENOTEMPTY) => End::Holds,
        Err(e) => End::Failed(e),
    };
    r
}

/// What is left on a server that stopped answering.
fn unanswered_note(shown: &str, files: usize, e: &dyn std::fmt::Display) -> String {
    format!(
        "could not remove {shown}: the server did not answer ({e}); {files} file(s) of the run and its directory are left: remove {shown} when the server is back"
    )
}

impl ShareDir {
    /// Removes the run directory and the files this run made in it, by handle: notes of what
    /// was left, and whether the journal may forget it (nothing more a restart could do).
    pub(super) fn remove_made(
        &mut self,
        dir_id: FileId,
        held: Option<&Handle>,
        made: &[(String, Made)],
    ) -> (Vec<String>, bool) {
        let shown = self.shown();
        let client = self.client();
        let at = match client.dir_handle() {
            Ok(h) => h,
            Err(e) if e.is_unanswered() => {
                return (vec![unanswered_note(&shown, made.len(), &e)], false)
            }
            Err(e) => return (vec![format!("could not remove {shown}: {e}")], false),
        };
        let files: Vec<Recorded> = made
            .iter()
            .map(|(n, m)| (n.clone(), Some(m.id), Some(m.handle)))
            .collect();
        let name = self.name().to_string();
        let r = remove(self.client(), &at, &name, dir_id, held, &files);
        let n = made.len();
        let (note, forget) = match r.end {
            End::Gone(_) => (None, true),
            End::NotAtName(true) => (Some(format!(
                "{shown}: no longer the directory this run made (moved or replaced by someone else); nothing under that name was removed; the run's directory, wherever it is now, had {} of its {n} file(s) removed by its handle, and is left there",
                r.removed
            )), true),
            End::NotAtName(false) => (Some(format!(
                "{shown}: no longer the directory this run made (replaced or removed by someone else); nothing under that name was removed, and the {n} file(s) the run made are wherever it was moved"
            )), true),
            End::Holds => (Some(format!(
                "left {shown}: it holds what this run did not make ({} file(s) under its names are not what it made)",
                r.others
            )), true),
            End::Failed(e) if unanswered(&e) => {
                (Some(unanswered_note(&shown, n - r.removed, &e)), false)
            }
            End::Failed(e) => (Some(format!(
                "could not remove {shown}: {e} (what others put in it is left in place)"
            )), false),
        };
        (note.into_iter().collect(), forget)
    }
}

/// Removes a share's run directory a crashed agent left, from its journal line (`URL/NAME
/// NAME@ID/... DIRID HANDLE`). What was made but not yet recorded is left and said.
pub(super) fn remove_share_run(entry: &str) -> String {
    let mut parts = entry.splitn(3, ' ');
    let (dir, files) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let mut rest = parts.next().unwrap_or("").split(' ');
    let dir_id = rest.next().and_then(file_id).map(|(id, _)| id);
    let held = rest.next().and_then(handle_of);
    let dir = unescape(dir);
    let Some((parent, name)) = dir.rsplit_once('/') else {
        return "a damaged journal line was skipped".into();
    };
    let earlier = "left by an earlier run that did not finish";
    let Some(dir_id) = dir_id else {
        return format!(
            "left {dir}, made by an earlier run that did not finish before it recorded what it made: stormark removes only what it can tell is its own; remove it by hand if it is"
        );
    };
    let connected = Url::parse(parent)
        .map_err(|e| e.to_string())
        .and_then(|u| Client::connect(&u, 1).map_err(|e| e.to_string()))
        .and_then(|mut c| {
            let at = c.dir_handle().map_err(|e| e.to_string())?;
            Ok((c, at))
        });
    let (mut client, at) = match connected {
        Ok(c) => c,
        Err(e) => return format!("could not remove {dir}, {earlier}: {e}"),
    };
    client.set_timeout(CLEANUP_TIMEOUT);
    let files: Vec<Recorded> = files
        .split('/')
        .filter(|f| !f.is_empty())
        .map(|f| match f.rsplit_once('@') {
            Some((n, made)) => {
                let (id, handle) = file_id(made).unzip();
                (unescape(n), id, handle.flatten())
            }
            None => (unescape(f), None, None),
        })
        .collect();
    let r = remove(&mut client, &at, name, dir_id, held.as_ref(), &files);
    match r.end {
        End::Gone(true) => format!("removed {dir} ({} file(s)), {earlier}", r.removed),
        End::Gone(false) => format!("{dir}, {earlier}, is gone already"),
        End::NotAtName(true) => format!(
            "left {dir}: no longer the directory an earlier run made there (moved or replaced by someone else): nothing under that name was touched; the run's directory, wherever it is now, had {} of its files removed by its handle, and is left there (its new name is not known)",
            r.removed
        ),
        End::NotAtName(false) => format!(
            "left {dir}: no longer the directory an earlier run made there (replaced by someone else); nothing in it was removed"
        ),
        End::Holds => format!(
            "left {dir}, {earlier}: {} file(s) under its names are not what it made; the rest of its files ({}) were removed",
            r.others, r.removed
        ),
        End::Failed(e) => format!(
            "could not remove {dir}, {earlier}: {e} (what others put in it is left in place)"
        ),
    }
}
