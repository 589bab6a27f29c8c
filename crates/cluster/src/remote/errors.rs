//! A call's failure as the coordinator says it: the agent's refusal (exit 2) or the host's
//! failure (exit 1), in the transport's words or the agent's, on one line.

use tonic::{Code, Status};

use super::link::one_cause;
use super::SILENCE;
use crate::agent::AgentError;

/// A call's failure as the coordinator sees it: the agent's refusals (bad target, path not
/// allowed, busy, wrong token) stop the run before load (exit 2); the rest are failures.
pub(crate) fn agent_error(address: &str, s: Status) -> AgentError {
    // The agent's words: on one line, no escape sequence reaches the terminal.
    let text = transport_text(&s).unwrap_or_else(|| words(&s));
    let (agent, message) = (address.to_string(), text);
    match s.code() {
        Code::InvalidArgument
        | Code::PermissionDenied
        | Code::FailedPrecondition
        | Code::Unauthenticated
        | Code::Unavailable
        | Code::NotFound => AgentError::RemoteRefused { agent, message },
        _ => AgentError::RemoteFailed { agent, message },
    }
}

/// A call's failure once the session is open (its handshake and validation answered): an
/// agent answers `Unavailable` only to a handshake (busy), so here it is the transport's word
/// for a connection that cannot be made again (refused, unreachable): the agent is gone, its
/// host's failure (exit 1, the run going on by its policy), not the user's mistake.
pub(crate) fn session_error(address: &str, s: Status) -> AgentError {
    if s.code() != Code::Unavailable {
        return agent_error(address, s);
    }
    AgentError::RemoteFailed {
        agent: address.to_string(),
        message: transport_text(&s).unwrap_or_else(|| {
            format!(
                "no longer answers ({}): the agent stopped or was killed, or its host went down",
                words(&s)
            )
        }),
    }
}

/// What a call's failure means in the transport's words that say it (no answer in time, a
/// connection gone mid-call); `None` for other words.
fn transport_text(s: &Status) -> Option<String> {
    match s.message() {
        m if m.contains("deadline has elapsed") || m.contains("Timeout expired") => {
            Some(format!("no answer within {} s", SILENCE.as_secs()))
        }
        // HTTP/2's words for a peer gone mid-call.
        m if m.contains("error reading a body from connection")
            || m.contains("connection reset")
            || m.contains("broken pipe") =>
        {
            Some("its connection closed in the middle of a call: the agent was killed, or its host or the network went down".into())
        }
        _ => None,
    }
}

/// A status's message on one line, each cause once, no escape sequence.
fn words(s: &Status) -> String {
    stormark_spec::printable(&one_cause(s.message()), 500)
}
