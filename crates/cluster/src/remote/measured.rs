//! What an agent can have measured by the time its events arrive: a bound on the seconds and
//! ends it sends, so that a broken or hostile agent's figures cannot make the coordinator
//! close seconds without end.

use std::time::Duration;

use crate::agent::AgentError;

/// Time an agent's clock may run ahead of the coordinator's over a stage, and the rounding
/// of its seconds.
const MEASURABLE_SLACK: Duration = Duration::from_secs(2);

/// An agent's second or worker end `at_ns` after its measured start, read `elapsed` after its
/// stage's stream was opened (the stage starts later): an error when it lies past what the
/// agent can have measured by then. Taken as it is, a second or an end far ahead would have
/// the coordinator close every second up to it (a broken or hostile agent's billions).
pub(super) fn unmeasurable(
    address: &str,
    what: &str,
    at_ns: u64,
    elapsed: Duration,
) -> Result<(), AgentError> {
    let most = (elapsed + MEASURABLE_SLACK).as_nanos();
    if u128::from(at_ns) <= most {
        return Ok(());
    }
    Err(AgentError::RemoteFailed {
        agent: address.to_string(),
        message: format!(
            "{what} {:.1} s into the stage, {:.1} s after it was called: not measured",
            at_ns as f64 / 1e9,
            elapsed.as_secs_f64()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agents_second_or_end_past_what_it_can_have_measured_fails_it() {
        let ten = Duration::from_secs(10);
        // Within the time since the call, and the slack.
        assert!(unmeasurable("a:1", "a second", 9_000_000_000, ten).is_ok());
        assert!(unmeasurable("a:1", "an end", 12_000_000_000, ten).is_ok());
        // Past it: the second the coordinator would otherwise close every second up to.
        let far = u64::from(u32::MAX) * 1_000_000_000;
        let e = unmeasurable("a:1", "a second", far, ten)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a:1") && e.contains("not measured"), "{e}");
        assert!(unmeasurable("a:1", "an end", 12_000_000_001, ten).is_err());
        assert!(unmeasurable("a:1", "an end", u64::MAX, ten).is_err());
    }
}
