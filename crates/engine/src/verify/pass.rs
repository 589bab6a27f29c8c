//! The pass after the load: every written block read back and judged.

use std::os::fd::AsRawFd;
use std::time::Instant;

use stormark_stats::{ErrorKind, Op};

use super::{judge, state_name, Verifier, CHUNK, SHOWN};
use crate::buffer::AlignedBuf;
use crate::ctx::Ctx;
use crate::target::Place;
use crate::EngineError;

/// The pass after the load (or all of `--verify-only`): reads every block written back, in
/// 4 MiB reads (timed as [`Op::Verify`] with `--verify-only`), and checks it; a bad block is a
/// failure of [`Op::Verify`] of its kind. Returns the bad blocks described (the
/// first few), or `None` when every block was right; what it checked is counted in the
/// recorder (blocks, bytes, bad ones), the same whether any was bad or none. Saves the state beside each file of a
/// run directory for a later `--verify-only`.
pub(crate) fn verify_pass(
    ctx: &mut Ctx<'_>,
    mut remote: Option<&mut dyn crate::remote::Remote>,
) -> Result<Option<String>, EngineError> {
    let spec = ctx.spec.verify.expect("a verify pass is asked for");
    let v = match ctx.bufs.take_verifier() {
        Some(v) => v,
        None => Verifier::load(&ctx.spec.files, spec.block, 1).map_err(EngineError::Verify)?,
    };
    if !spec.only {
        for (i, t) in ctx.spec.files.iter().enumerate() {
            if let Place::Beneath { dir, name } = &t.place {
                dir.write_atomic(&state_name(name), &v.state_bytes(i))
                    .map_err(|e| {
                        EngineError::Verify(format!("saving {}: {e}", state_name(name)))
                    })?;
            }
        }
    }
    if !spec.after && !spec.only {
        return Ok(None);
    }
    let block = v.block;
    let chunk = (CHUNK / block).max(1) * block;
    let buf = AlignedBuf::zeroed(chunk)?;
    let mut shown = Vec::new();
    let (mut bad, mut checked) = (0u64, 0u64);
    for (i, blocks) in v.files.iter().enumerate() {
        // A LUN's or a share's blocks come back over the worker's connection; a file's
        // with pread.
        let fd = ctx.files.get(i).map_or(-1, |f| f.as_raw_fd());
        let base = ctx.spec.files[i].start;
        let per = chunk / block;
        for (c, want) in blocks.chunks(per).enumerate() {
            if want.iter().all(|&w| w == 0) {
                continue;
            }
            let off = (c * chunk) as u64;
            let len = want.len() * block;
            let start = Instant::now();
            let got = match remote.as_deref_mut() {
                Some(r) => {
                    // SAFETY: buf holds `chunk` >= len bytes, borrowed here alone.
                    let into = unsafe { std::slice::from_raw_parts_mut(buf.at(0), len) };
                    match r.read_at(i as u32, base + off, into) {
                        Ok(Ok(n)) if n as usize == len || n == crate::remote::ALL => Ok(()),
                        Ok(Ok(_)) => Err(ErrorKind::Short),
                        Ok(Err(kind)) => Err(kind),
                        Err(_) => Err(ErrorKind::Reset),
                    }
                }
                None => read_file(fd, &buf, base + off, len, chunk),
            };
            let now = Instant::now();
            if spec.only {
                ctx.pace.tick(now, &mut ctx.rec, ctx.tx);
            }
            if let Err(kind) = got {
                ctx.rec.record_error(Op::Verify, kind, base + off, i as u32);
                continue;
            }
            // Timed only when it is the whole phase (--verify-only): after a load, the pass
            // is past the measured time, and a rate over it would mean nothing.
            if spec.only {
                ctx.rec.record(
                    Op::Verify,
                    len as u64,
                    now.saturating_duration_since(start).as_nanos() as u64,
                );
            }
            let (checked_before, bad_before) = (checked, bad);
            for (b, &w) in want.iter().enumerate() {
                if w == 0 {
                    continue;
                }
                checked += 1;
                let blk = &buf.as_slice()[b * block..(b + 1) * block];
                let at = off + (b * block) as u64;
                if let Some((kind, why)) = judge(blk, v.run, i as u32, at, w) {
                    bad += 1;
                    ctx.rec.record_error(Op::Verify, kind, base + at, i as u32);
                    if shown.len() < SHOWN {
                        shown.push(format!(
                            "{} offset {}: {} ({why})",
                            ctx.spec.files[i].shown().display(),
                            base + at,
                            kind.name()
                        ));
                    }
                }
            }
            // What this chunk checked, so that a clean pass says so too.
            ctx.rec.record_verified(stormark_stats::Verified {
                blocks: checked - checked_before,
                objects: 0,
                bytes: (checked - checked_before) * block as u64,
                bad: bad - bad_before,
            });
        }
    }
    Ok((bad > 0).then(|| {
        format!(
            "--verify: {bad} of {checked} blocks bad: {}{}",
            shown.join("; "),
            if bad as usize > shown.len() {
                "; ..."
            } else {
                ""
            }
        )
    }))
}

/// Reads `len` bytes of file `fd` at `at` into `buf`, the next two chunks read ahead meanwhile
/// (buffered; a hint).
fn read_file(
    fd: i32,
    buf: &AlignedBuf,
    at: u64,
    len: usize,
    chunk: usize,
) -> Result<(), ErrorKind> {
    // SAFETY: fd is open; advice only.
    unsafe {
        libc::posix_fadvise(
            fd,
            (at + len as u64) as libc::off_t,
            2 * chunk as libc::off_t,
            libc::POSIX_FADV_WILLNEED,
        )
    };
    // SAFETY: buf holds `chunk` >= len bytes; fd is open for reading.
    let n = unsafe { libc::pread(fd, buf.at(0).cast(), len, at as libc::off_t) };
    match n {
        n if n == len as isize => Ok(()),
        n if n < 0 => Err(ErrorKind::from_errno(
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        )),
        _ => Err(ErrorKind::Short),
    }
}
