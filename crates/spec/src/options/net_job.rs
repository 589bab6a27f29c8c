//! The network part of a job's options: what `kind = "net"` needs, and net options on another
//! kind refused.

use crate::choices::LoadKind;
use crate::net::{NetJob, NetMode};
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
                ("bitrate", self.bitrate.is_some()),
                ("protocol", self.udp.is_some()),
                ("path_mtu", self.path_mtu.is_some()),
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
                "the HOST[:PORT] of a `stormark net server`, such as server = \"10.0.0.2:7879\", or server = \"agents\"",
            )
        })?;
        let mode = self.mode.unwrap_or_default();
        let udp = self.udp.unwrap_or(false);
        let refused = [
            (
                "rate_iops",
                self.rate_iops.is_some() && mode != NetMode::Rtt,
            ),
            ("io_total", self.io_total.is_some()),
            ("verify", self.verify.is_some()),
            ("steady_state", self.steady_state.is_some()),
        ];
        refuse_given(
            &refused,
            "not an option of net jobs: they stream for `time` (rate_iops paces round trips, mode = \"rtt\"; bitrate paces streams)",
        )?;
        let bad = |key: &str, value: String, why: &str| Err(SpecError::invalid(key, &value, why));
        if udp && mode != NetMode::Send {
            return bad(
                "protocol",
                "udp".into(),
                "UDP is sent from this host only: mode = \"send\" (run the client on the other host for the other direction)",
            );
        }
        if mode == NetMode::Rtt && self.bitrate.is_some() {
            return bad(
                "bitrate",
                self.bitrate.unwrap_or(0).to_string(),
                "bitrate paces streams; round trips are paced by rate_iops",
            );
        }
        if mode == NetMode::Bidir && self.jobs.is_some_and(|j| j % 2 == 1) {
            return bad(
                "jobs",
                self.jobs.unwrap_or(0).to_string(),
                "an even number of streams with mode = \"bidir\": the first half send, the second half receive",
            );
        }
        let msg_size = match self.msg_size {
            Some(s) if udp && !(32..=65_000).contains(&s) => {
                return bad(
                    "msg_size",
                    s.to_string(),
                    "a datagram from 32 to 65000 bytes, such as 1400",
                )
            }
            Some(s) => s,
            None if udp => 1400,
            None if mode == NetMode::Rtt => 64,
            None => 128 << 10,
        };
        // A server's limit, each way: both ways at once holds twice as many.
        let most = crate::net::MAX_STREAMS * if mode == NetMode::Bidir { 2 } else { 1 };
        if self.jobs.is_some_and(|j| j > most) {
            return Err(SpecError::invalid(
                "jobs",
                &self.jobs.unwrap_or(0).to_string(),
                format!("at most {most} streams per net job (a server's limit, each way)"),
            ));
        }
        Ok(Some(NetJob {
            servers,
            mode,
            msg_size,
            // UDP is always paced: 1 Mbit/s unless told (iperf3's default).
            bitrate: self.bitrate.unwrap_or(if udp { 1_000_000 } else { 0 }),
            udp,
            path_mtu: self.path_mtu.unwrap_or(false),
        }))
    }
}
