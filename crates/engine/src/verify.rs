//! `--verify`: every written block starts with a header (run, file, offset, write sequence,
//! CRC-32C of the block), the worker keeps the sequence it last wrote to each block, and after
//! the load reads every written block back and names each bad one by kind: a bad checksum
//! (`corrupt`), another offset's or file's block (`misplaced`), an older write (`stale`), zeros
//! (`hole`). The expected sequences are kept beside a run directory's file, so that
//! `--verify-only` can check what a `--keep` run left, after a crash, failover or resilver.

use stormark_stats::ErrorKind;

use crate::buffer::AlignedBuf;
use crate::target::Place;

/// The first 8 bytes of every verified block.
const MAGIC: u64 = u64::from_le_bytes(*b"STMKVRFY");
/// Header bytes: magic, run, offset (8 each), sequence, file, CRC-32C (4 each), 4 zero.
pub const HEADER: usize = 40;
/// The first bytes of a state file.
const STATE_MAGIC: &[u8; 8] = b"STMKVST1";
/// A block written by two writes in flight at once: either may be on disk.
const EITHER: u32 = u32::MAX;
/// A block trimmed after the load (fio's `trim_percentage`): zeros, or anything when
/// `trim_verify_zero` is off.
pub(crate) const TRIMMED: u32 = u32::MAX - 1;
/// Bad blocks described in full (all are counted).
pub(crate) const SHOWN: usize = 8;
/// Bytes read at a time by the verify pass (the next two read ahead meanwhile).
pub(crate) const CHUNK: usize = 4 << 20;

/// What `--verify` asks of a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifySpec {
    /// Bytes per verified block (every I/O's offset and length are multiples of it).
    pub block: u64,
    /// Only check what a kept run left (no load).
    pub only: bool,
    /// Check the written blocks after the load; `false`: only keep their expected state
    /// beside a run directory's file, for a later job or `--verify-only` (fio's `do_verify=0`).
    pub after: bool,
    /// The share of written blocks trimmed after the load, before the check (fio's
    /// `trim_percentage`; 0: none).
    pub trim_pct: u8,
    /// Trimmed blocks must read back as zeros (fio's `trim_verify_zero`).
    pub trim_zero: bool,
}

/// The name of the state file beside a run directory's file `name`.
pub fn state_name(name: &str) -> String {
    format!("{name}.verify")
}

/// A worker's expected state: per file, the sequence last written to each block (0: never).
pub(crate) struct Verifier {
    run: u64,
    block: usize,
    files: Vec<Vec<u32>>,
    seq: u32,
    /// The blocks of the write in flight in each slot: file, first block, end (`None`:
    /// nothing in flight).
    inflight: Vec<Option<(u32, usize, usize)>>,
}

impl Verifier {
    pub(crate) fn new(run: u64, block: u64, lens: &[u64], slots: usize) -> Verifier {
        Verifier {
            run,
            block: block as usize,
            files: lens.iter().map(|l| vec![0; (l / block) as usize]).collect(),
            seq: 0,
            inflight: vec![None; slots.max(1)],
        }
    }

    /// Writes the headers of a write of `len` bytes at `at` in `buf` (from `slot`, to `file`
    /// at `offset`) and notes its sequence as what each of its blocks must hold.
    pub(crate) fn stamp(
        &mut self,
        buf: &AlignedBuf,
        at: usize,
        len: usize,
        slot: usize,
        file: u32,
        offset: u64,
    ) {
        // 1, 2, ... skipping 0 (never written), TRIMMED and EITHER.
        self.seq = if self.seq + 1 >= TRIMMED {
            1
        } else {
            self.seq + 1
        };
        let seq = self.seq;
        let first = (offset / self.block as u64) as usize;
        let end = first + len.div_ceil(self.block);
        // Other writes in flight over these blocks: whichever lands last is on disk, so the
        // blocks they share may hold any of them (however many times rewritten meanwhile).
        let overlaps = self
            .inflight
            .iter()
            .flatten()
            .any(|&(f, a, b)| f == file && a < end && first < b);
        let inflight = &self.inflight;
        let state = &mut self.files[file as usize];
        for (i, pos) in (0..len).step_by(self.block).enumerate() {
            // SAFETY: the region [at, at + len) is the slot's, not in flight.
            let blk = unsafe { std::slice::from_raw_parts_mut(buf.at(at + pos), self.block) };
            let off = offset + pos as u64;
            blk[0..8].copy_from_slice(&MAGIC.to_le_bytes());
            blk[8..16].copy_from_slice(&self.run.to_le_bytes());
            blk[16..24].copy_from_slice(&off.to_le_bytes());
            blk[24..28].copy_from_slice(&seq.to_le_bytes());
            blk[28..32].copy_from_slice(&file.to_le_bytes());
            blk[36..40].fill(0);
            let crc = checksum(blk);
            blk[32..36].copy_from_slice(&crc.to_le_bytes());
            if let Some(s) = state.get_mut(first + i) {
                let b = first + i;
                let racing = overlaps
                    && inflight
                        .iter()
                        .flatten()
                        .any(|&(f, lo, hi)| f == file && (lo..hi).contains(&b));
                *s = if racing { EITHER } else { seq };
            }
        }
        self.inflight[slot] = Some((file, first, end));
    }

    /// The write of `slot` has completed; `ok` false when it failed (an error, or fewer
    /// bytes than asked): what its blocks hold is then not known (the earlier write, zeros, or
    /// part of this one), so they are left out of the check (the failure itself is counted).
    #[inline]
    pub(crate) fn done(&mut self, slot: usize, ok: bool) {
        if let (false, Some((file, first, end))) = (ok, self.inflight[slot]) {
            if let Some(blocks) = self.files[file as usize].get_mut(first..end) {
                blocks.fill(0);
            }
        }
        self.inflight[slot] = None;
    }

    /// The state file's bytes for file `i`.
    fn state_bytes(&self, i: usize) -> Vec<u8> {
        let blocks = &self.files[i];
        let mut out = Vec::with_capacity(32 + 4 * blocks.len());
        out.extend_from_slice(STATE_MAGIC);
        out.extend_from_slice(&self.run.to_le_bytes());
        out.extend_from_slice(&(self.block as u64).to_le_bytes());
        out.extend_from_slice(&(blocks.len() as u64).to_le_bytes());
        for s in blocks {
            out.extend_from_slice(&s.to_le_bytes());
        }
        out
    }

    /// Reads the state files a kept run left for `files`: the run must be one run with this
    /// block size and these lengths.
    fn load(targets: &[crate::FileTarget], block: u64, slots: usize) -> Result<Verifier, String> {
        let mut v = Verifier::new(0, block, &[], slots);
        for t in targets {
            let Place::Beneath { dir, name } = &t.place else {
                return Err(format!(
                    "{}: --verify-only checks the files of a kept run directory (--reuse), where their expected state is",
                    t.shown().display()
                ));
            };
            let want = 32 + 4 * (t.len / block) as usize;
            let fail = |why: &str| format!("{}: {why}", dir.shown(state_name(name)).display());
            let bytes = dir
                .read_limited(&state_name(name), want as u64)
                .map_err(|e| fail(&format!("{e} (was the run made with --verify --keep?)")))?;
            if bytes.len() != want || &bytes[0..8] != STATE_MAGIC {
                return Err(fail(
                    "not the state --verify wrote for this file and block size",
                ));
            }
            let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
            if word(16) != block {
                return Err(fail(&format!(
                    "written with {}-byte verify blocks, not {block}",
                    word(16)
                )));
            }
            let run = word(8);
            if v.files.is_empty() {
                v.run = run;
            } else if run != v.run {
                return Err(fail("from another run than the other files"));
            }
            v.files.push(
                bytes[32..]
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
                    .collect(),
            );
        }
        Ok(v)
    }
}

/// CRC-32C of a block with its checksum field taken as zeros.
fn checksum(blk: &[u8]) -> u32 {
    let c = crc32c::crc32c(&blk[0..32]);
    let c = crc32c::crc32c_append(c, &[0; 4]);
    crc32c::crc32c_append(c, &blk[36..])
}

/// What is wrong with a block that should hold write `want` of offset `off` of file `file`.
pub(crate) fn judge(
    blk: &[u8],
    run: u64,
    file: u32,
    off: u64,
    want: u32,
) -> Option<(ErrorKind, String)> {
    let word = |i: usize| u64::from_le_bytes(blk[i..i + 8].try_into().expect("8 bytes"));
    let half = |i: usize| u32::from_le_bytes(blk[i..i + 4].try_into().expect("4 bytes"));
    if word(0) != MAGIC {
        return Some(if blk.iter().all(|&b| b == 0) {
            (
                ErrorKind::Hole,
                "zeros where write #{want} was".replace("{want}", &want.to_string()),
            )
        } else {
            (
                ErrorKind::Corrupt,
                "no verify header: overwritten by something else".into(),
            )
        });
    }
    let (found, crc) = (half(32), checksum(blk));
    // Writes that raced over this block in flight may have landed in pieces (a 64 MiB write
    // is many device writes): a mix of this run's own writes of this block, so its header
    // names it, but no one checksum holds. Checked for its place and run only.
    let raced = want == EITHER && word(16) == off && half(28) == file && word(8) == run;
    if found != crc && !raced {
        return Some((
            ErrorKind::Corrupt,
            format!("checksum {found:#010x} recorded, {crc:#010x} computed: bytes changed"),
        ));
    }
    if word(16) != off || half(28) != file {
        return Some((
            ErrorKind::Misplaced,
            format!(
                "holds the block of offset {} of file {}",
                word(16),
                half(28)
            ),
        ));
    }
    if word(8) != run {
        return Some((
            ErrorKind::Stale,
            "a block of another run: a write lost".into(),
        ));
    }
    let seq = half(24);
    (want != EITHER && seq != want).then(|| {
        let kind = if seq < want {
            ErrorKind::Stale
        } else {
            ErrorKind::Corrupt
        };
        (
            kind,
            format!("write #{seq} where write #{want} was: a write lost"),
        )
    })
}

pub(crate) mod pass;

#[cfg(test)]
mod tests {
    use super::*;

    fn block_of(v: &mut Verifier, file: u32, off: u64) -> Vec<u8> {
        let buf = AlignedBuf::filled(4096, 3, 1.0).unwrap();
        v.stamp(&buf, 0, 4096, 0, file, off);
        v.done(0, true);
        buf.as_slice()[..4096].to_vec()
    }

    /// A write that failed (ENOSPC, EIO, a short write) leaves its blocks out of the check:
    /// they may hold the earlier write, zeros or part of it, and the failure is counted
    /// already; a block written before and not by the failed write keeps its expectation.
    #[test]
    fn a_failed_write_leaves_its_blocks_unchecked() {
        let mut v = Verifier::new(77, 4096, &[1 << 20], 2);
        let buf = AlignedBuf::filled(8192, 3, 1.0).unwrap();
        v.stamp(&buf, 0, 8192, 0, 0, 0);
        v.done(0, true);
        assert_eq!(&v.files[0][..2], &[1, 1]);
        v.stamp(&buf, 0, 4096, 1, 0, 4096);
        v.done(1, false);
        assert_eq!(
            &v.files[0][..2],
            &[1, 0],
            "the failed write's block unchecked, the other kept"
        );
    }

    #[test]
    fn each_fault_is_named_by_its_kind() {
        let mut v = Verifier::new(77, 4096, &[1 << 20], 1);
        let good = block_of(&mut v, 0, 8192);
        assert_eq!(judge(&good, 77, 0, 8192, 1), None);
        let mut flipped = good.clone();
        flipped[1000] ^= 1;
        assert_eq!(
            judge(&flipped, 77, 0, 8192, 1).unwrap().0,
            ErrorKind::Corrupt
        );
        assert_eq!(
            judge(&good, 77, 0, 12288, 1).unwrap().0,
            ErrorKind::Misplaced
        );
        assert_eq!(
            judge(&good, 77, 1, 8192, 1).unwrap().0,
            ErrorKind::Misplaced
        );
        let newer = block_of(&mut v, 0, 8192);
        assert_eq!(judge(&good, 77, 0, 8192, 2).unwrap().0, ErrorKind::Stale);
        assert_eq!(judge(&newer, 77, 0, 8192, 2), None);
        assert_eq!(judge(&good, 78, 0, 8192, 1).unwrap().0, ErrorKind::Stale);
        assert_eq!(
            judge(&[0; 4096], 77, 0, 8192, 1).unwrap().0,
            ErrorKind::Hole
        );
        assert_eq!(v.files[0][2], 2);
    }

    #[test]
    fn a_block_rewritten_while_its_last_write_is_in_flight_takes_either() {
        let mut v = Verifier::new(1, 4096, &[1 << 20], 2);
        let buf = AlignedBuf::filled(8192, 3, 1.0).unwrap();
        v.stamp(&buf, 0, 4096, 0, 0, 0);
        v.stamp(&buf, 4096, 4096, 1, 0, 0);
        assert_eq!(v.files[0][0], EITHER);
        v.done(0, true);
        v.done(1, true);
        v.stamp(&buf, 0, 4096, 0, 0, 0);
        assert_eq!(v.files[0][0], 3);
    }

    /// Writes racing over a block may land in pieces: a mix of this run's writes of the
    /// block passes when it raced, and is corrupt when it did not.
    #[test]
    fn a_block_torn_between_racing_writes_is_checked_for_its_place_only() {
        let mut v = Verifier::new(77, 4096, &[1 << 20], 2);
        let buf = AlignedBuf::filled(8192, 3, 1.0).unwrap();
        v.stamp(&buf, 0, 4096, 0, 0, 8192);
        v.stamp(&buf, 4096, 4096, 1, 0, 8192);
        let mut torn = buf.as_slice()[..4096].to_vec();
        torn[2048..].copy_from_slice(&buf.as_slice()[4096 + 2048..8192]);
        assert_eq!(judge(&torn, 77, 0, 8192, EITHER), None);
        assert_eq!(judge(&torn, 77, 0, 8192, 2).unwrap().0, ErrorKind::Corrupt);
        assert!(judge(&torn, 77, 0, 12288, EITHER).is_some());
    }

    /// Three writes of one block in flight at once (fio's iodepth=256 on 256 blocks found
    /// it): the third must not expect itself on disk while the first two may still land.
    #[test]
    fn a_block_rewritten_twice_while_in_flight_still_takes_either() {
        let mut v = Verifier::new(1, 4096, &[1 << 20], 3);
        let buf = AlignedBuf::filled(3 * 8192, 3, 1.0).unwrap();
        v.stamp(&buf, 0, 8192, 0, 0, 0);
        v.stamp(&buf, 8192, 4096, 1, 0, 4096);
        v.stamp(&buf, 16384, 4096, 2, 0, 4096);
        assert_eq!((v.files[0][0], v.files[0][1]), (1, EITHER));
        v.done(0, true);
        v.done(1, true);
        // Write 3 still in flight; a fourth from the freed slot 0 races it.
        v.stamp(&buf, 0, 4096, 0, 0, 4096);
        assert_eq!(v.files[0][1], EITHER);
        v.done(0, true);
        v.done(2, true);
        v.stamp(&buf, 0, 4096, 0, 0, 4096);
        assert_eq!(v.files[0][1], 5);
    }
}
