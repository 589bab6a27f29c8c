//! The io_uring engine's own keys, by fio's names: registered buffers (`fixedbufs`),
//! registered files (`registerfiles`), a kernel thread polling the submission queue
//! (`sqthread_poll`) and polled completions (`hipri`).

use super::JobOpts;
use crate::units::{parse_bool, BOOL_FORM};
use crate::workload::Ring;
use crate::SpecError;

impl JobOpts {
    /// The io_uring keys; `false` for another key.
    pub(super) fn set_ring_key(
        &mut self,
        canonical: &str,
        value: &str,
        bad: &dyn Fn(&str) -> SpecError,
    ) -> Result<bool, SpecError> {
        let field = match canonical {
            "fixedbufs" => &mut self.fixedbufs,
            "registerfiles" => &mut self.registerfiles,
            "sqthread_poll" => &mut self.sqthread_poll,
            "hipri" => &mut self.hipri,
            _ => return Ok(false),
        };
        *field = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?);
        Ok(true)
    }

    /// The ring the job asks for: each feature asked for by name, or turned off by name
    /// (buffers and files are otherwise registered where the kernel lets it).
    pub(super) fn ring(&self) -> Ring {
        Ring {
            fixed_bufs: self.fixedbufs.unwrap_or(false),
            registered_files: self.registerfiles.unwrap_or(false),
            sq_poll: self.sqthread_poll.unwrap_or(false),
            hipri: self.hipri.unwrap_or(false),
            fixed_bufs_off: self.fixedbufs == Some(false),
            registered_files_off: self.registerfiles == Some(false),
        }
    }
}
