//! The handshake that opens a session, asked again while the agent is still removing its
//! last run's files: no load starts on a host beside that removal.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use tokio::runtime::Runtime;
use tonic::Code;

use super::{agent_error, coordinator_name, Client};
use crate::agent::AgentError;
use crate::wire::pb;

/// How long a coordinator waits for an agent still removing its last run's files before it
/// gives up: generous, since 16 GiB of fragmented files on a device that discards what is
/// freed took 147 s (issue 53).
pub(crate) const REMOVAL_WAIT: Duration = Duration::from_secs(600);

/// How often a waiting coordinator asks again whether the last run's files are gone.
const REMOVAL_ASK: Duration = Duration::from_millis(500);

/// The agent's handshake reply that opens a session, with when it was sent and how long it
/// took (for the first clock offset). While the agent answers that it is still removing its
/// last run's files, says so once through `say` and asks again, up to [`REMOVAL_WAIT`];
/// `stop` (Ctrl-C) ends the wait as [`AgentError::Interrupted`].
pub(super) fn handshake(
    rt: &Runtime,
    client: &mut Client,
    address: &str,
    tls_ca: Option<&[u8]>,
    stop: &AtomicBool,
    say: &(dyn Fn(&str) + Sync),
) -> Result<(pb::HandshakeReply, SystemTime, Duration), AgentError> {
    let refused = |message: String| AgentError::RemoteRefused {
        agent: address.to_string(),
        message,
    };
    let waited = Instant::now();
    let mut said = false;
    loop {
        let sent = SystemTime::now();
        let t = Instant::now();
        let hello = rt
            .block_on(client.handshake(pb::HandshakeRequest {
                version: env!("CARGO_PKG_VERSION").into(),
                coordinator: coordinator_name().to_string(),
            }))
            .map_err(|s| {
                // A TLS agent answers plain HTTP/2 with a broken connection, not a status.
                let transport =
                    matches!(s.code(), Code::Unknown | Code::Cancelled | Code::Internal);
                let mut message = match agent_error(address, s) {
                    AgentError::RemoteRefused { message, .. }
                    | AgentError::RemoteFailed { message, .. } => message,
                    e => e.to_string(),
                };
                if tls_ca.is_none() && transport {
                    message.push_str(" (if the agent serves TLS, give --tls-ca)");
                }
                refused(message)
            })?
            .into_inner();
        let elapsed = t.elapsed();
        let Some(removing) = &hello.removing else {
            return Ok((hello, sent, elapsed));
        };
        // A load started now would be measured beside the removal: the run waits for it.
        let left = crate::wire::left_words((removing.files_left, removing.bytes_left));
        if waited.elapsed() >= REMOVAL_WAIT {
            return Err(refused(format!(
                "still removing the last run's files after {} s{left}; try again when they are gone",
                removing.seconds
            )));
        }
        if !said {
            said = true;
            say(&format!(
                "agent {address}: removing the last run's files{left}; waiting"
            ));
        }
        let asked = Instant::now();
        while asked.elapsed() < REMOVAL_ASK {
            if stop.load(Ordering::Relaxed) {
                return Err(AgentError::Interrupted(
                    "waiting for an agent to remove its last run's files",
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
