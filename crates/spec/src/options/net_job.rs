//! The network part of a job's options: what `kind = "net"` needs, and net options on another
//! kind refused.

use crate::choices::LoadKind;
use crate::net::NetJob;
use crate::SpecError;

use super::{refuse_given, JobOpts};

impl JobOpts {
    /// The net part of a job of kind net; net options on another kind, and options a net job
    /// cannot honour, are mistakes.
    pub(super) fn net(&self, kind: LoadKind) -> Result<Option<NetJob>, SpecError> {
        if kind != LoadKind::Net {
            let given = [
                ("server", self.server.is_some()),
                ("mode", self.mode.is_some()),
                ("msg_size", self.msg_size.is_some()),
            ];
            refuse_given(
                &given,
                "an option of net jobs only: kind = \"net\" in a job file",
            )?;
            return Ok(None);
        }
        let servers = self.server.clone().ok_or_else(|| {
            SpecError::invalid(
                "server",
                "(missing)",
                "the HOST[:PORT] of a `stormark net server`, such as server = \"10.0.0.2:7879\"",
            )
        })?;
        let refused = [
            ("rate_iops", self.rate_iops.is_some()),
            ("io_total", self.io_total.is_some()),
            ("verify", self.verify.is_some()),
            ("steady_state", self.steady_state.is_some()),
        ];
        refuse_given(
            &refused,
            "not an option of net jobs: they stream for `time` (use `stormark net --rate-ops` for paced round trips)",
        )?;
        if self.jobs.is_some_and(|j| j > crate::net::MAX_STREAMS) {
            return Err(SpecError::invalid(
                "jobs",
                &self.jobs.unwrap_or(0).to_string(),
                format!(
                    "at most {} streams per net job (a server's limit)",
                    crate::net::MAX_STREAMS
                ),
            ));
        }
        Ok(Some(NetJob {
            servers,
            mode: self.mode.unwrap_or_default(),
            msg_size: self.msg_size.unwrap_or(128 << 10),
        }))
    }
}
