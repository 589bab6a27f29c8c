//! The pass after the load: every written block read back and judged.

use std::os::fd::AsRawFd;
use std::time::Instant;

use stormark_stats::{ErrorKind, Op};

use super::{judge, state_name, Verifier, CHUNK, SHOWN, TRIMMED};
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
    let mut v = match ctx.bufs.take_verifier() {
        Some(v) => v,
        None => Verifier::load(&ctx.spec.files, spec.block, 1).map_err(EngineError::Verify)?,
    };
    if spec.trim_pct > 0 && !spec.only {
        if remote.is_some() {
            return Err(EngineError::Verify(
                "trim_percentage: stormark trims no block of a LUN or a share; leave it out".into(),
            ));
        }
        trim_share(ctx, &mut v, spec.trim_pct)?;
    }
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
                // A trimmed block: zeros (fio's trim_verify_zero), or anything without it.
                let verdict = if w == TRIMMED {
                    (spec.trim_zero && blk.iter().any(|&b| b != 0)).then(|| {
                        (
                            ErrorKind::Corrupt,
                            "trimmed, but not zeros (trim_verify_zero)".to_string(),
                        )
                    })
                } else {
                    judge(blk, v.run, i as u32, at, w)
                };
                if let Some((kind, why)) = verdict {
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

/// fio's `trim_percentage`: that share of each file's written blocks, spread evenly, trimmed
/// once the load is over (a hole punched in a file, a discard on a device) and marked
/// [`TRIMMED`], so that the check finds them zeros. Untimed, one call a block.
fn trim_share(ctx: &Ctx<'_>, v: &mut Verifier, pct: u8) -> Result<(), EngineError> {
    let block = v.block;
    let mut share = 0u32;
    for (i, blocks) in v.files.iter_mut().enumerate() {
        let Some(file) = ctx.files.get(i) else {
            continue;
        };
        let device = file.metadata().is_ok_and(|m| {
            use std::os::unix::fs::FileTypeExt;
            m.file_type().is_block_device()
        });
        let base = ctx.spec.files[i].start;
        for (b, want) in blocks.iter_mut().enumerate() {
            if *want == 0 {
                continue;
            }
            share += u32::from(pct);
            if share < 100 {
                continue;
            }
            share -= 100;
            let at = base + (b * block) as u64;
            if crate::psync::trim(file.as_raw_fd(), at as libc::off_t, block, device) < 0 {
                return Err(EngineError::Verify(format!(
                    "trim_percentage: trimming {} at offset {at}: {}",
                    ctx.spec.files[i].shown().display(),
                    std::io::Error::last_os_error()
                )));
            }
            *want = TRIMMED;
        }
    }
    Ok(())
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
