//! A run as it happens: the coordinator's one stream of events (`cluster::Live`) turned into
//! what the user sees (the target before any load, each phase's table and findings as the
//! phase ends, meanwhile the live line of a terminal or a progress line every few seconds)
//! and into `--metrics-listen`'s figures. Nothing else samples the run.

use std::io::Write;
use std::time::Duration;

use stormark_cluster::Live;
use stormark_report::{LiveLine, LiveMetrics, Now};
use stormark_spec::{Step, Workload};
use stormark_stats::PhaseKind;

/// How the running phase is shown between its tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pace {
    /// Redrawn in place each second on standard error, a terminal.
    Line,
    /// A progress line this often, beside the tables.
    Every(Duration),
    /// Not at all (`--quiet`, `--progress 0`).
    Off,
}

/// The default pace where no terminal shows the live line: a CI log, `kubectl logs`.
pub(crate) const DEFAULT_PROGRESS: Duration = Duration::from_secs(10);

impl Pace {
    /// `--progress` and `--quiet` as given, and whether standard error is a terminal.
    pub(crate) fn choose(
        progress: Option<&str>,
        quiet: bool,
        terminal: bool,
    ) -> Result<Pace, String> {
        let every = match progress {
            Some(text) => Some(
                stormark_spec::parse_duration(text)
                    .filter(|d| d.is_zero() || *d >= Duration::from_millis(100))
                    .ok_or_else(|| {
                        format!(
                            "--progress {text}: expected a duration such as 10s or 1m (at least 100ms), or 0 for none"
                        )
                    })?,
            ),
            None => None,
        };
        Ok(match every {
            _ if quiet => Pace::Off,
            Some(d) if d.is_zero() => Pace::Off,
            Some(d) => Pace::Every(d),
            None if terminal => Pace::Line,
            None => Pace::Every(DEFAULT_PROGRESS),
        })
    }
}

/// What the run has shown so far, and where it stands.
pub(crate) struct Watch<'a> {
    metrics: Option<&'a LiveMetrics>,
    /// Tables and progress lines go to standard error: the results document owns standard
    /// output (`--json -`).
    to_stderr: bool,
    pace: Pace,
    line: LiveLine,
    /// Phases handed out so far in this repetition (the preparation not counted).
    phase: usize,
    /// How many there are, or at most (`bounded`).
    total: usize,
    bounded: bool,
    /// The phase running now: its name, how long it is planned to measure.
    current: String,
    planned: Option<Duration>,
    /// Measured time since the last progress line.
    since_progress: Duration,
    /// Hosts failed in the phase running now.
    failed: Vec<String>,
    /// Search steps said so far in this repetition.
    search_said: usize,
    /// What has been said at all: the target, phases.
    pub(crate) target_said: bool,
    pub(crate) phases_said: usize,
}

impl<'a> Watch<'a> {
    pub(crate) fn new(metrics: Option<&'a LiveMetrics>, to_stderr: bool, pace: Pace) -> Self {
        Watch {
            metrics,
            to_stderr,
            pace,
            line: LiveLine::new(),
            phase: 0,
            total: 0,
            bounded: false,
            current: String::new(),
            planned: None,
            since_progress: Duration::ZERO,
            failed: Vec::new(),
            search_said: 0,
            target_said: false,
            phases_said: 0,
        }
    }

    /// A repetition begins: its phases are counted from 1 again.
    pub(crate) fn repetition(&mut self) {
        self.phase = 0;
        self.search_said = 0;
    }

    /// Says `text` where the tables go, the live line cleared first.
    pub(crate) fn say(&mut self, text: &str) {
        let clear = self.line.clear();
        if !clear.is_empty() {
            let mut err = std::io::stderr();
            let _ = err.write_all(clear.as_bytes());
            let _ = err.flush();
        }
        if self.to_stderr {
            let _ = std::io::stderr().write_all(text.as_bytes());
        } else {
            // Standard output is line-buffered even into a pipe: each line leaves at once.
            let mut out = std::io::stdout();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
    }

    /// The plan handed out `step` (`None`: the run's phases are over), with at most
    /// `steps_left` after it; `search`: a search's steps so far, each said once as it is
    /// judged (that is when the plan is asked for the next).
    pub(crate) fn planned(
        &mut self,
        workload: &Workload,
        step: Option<&Step>,
        steps_left: usize,
        search: Option<&stormark_stats::SearchReport>,
    ) {
        if let Some(report) = search {
            let objects = workload.jobs.iter().any(|j| j.s3.is_some());
            while self.search_said < report.steps.len() {
                let text = stormark_report::search_step_line(
                    report,
                    self.search_said,
                    self.total,
                    objects,
                );
                self.search_said += 1;
                self.say(&text);
            }
        }
        let Some(step) = step else { return };
        self.phase += 1;
        self.total = self.phase + steps_left;
        self.bounded = step.kind == PhaseKind::SearchStep || step.pair.is_some();
        self.planned = stage_length(workload, step.stage);
    }

    /// One event of the coordinator: to `--metrics-listen`, then to the screen or the log.
    pub(crate) fn event(&mut self, event: &Live<'_>) {
        if let Some(m) = self.metrics {
            match event {
                Live::PhaseStarted { name } => m.phase(name),
                Live::Second {
                    interval, hosts, ..
                } => {
                    m.second(interval);
                    m.hosts(hosts);
                }
                Live::PhaseDone { phase, hosts, .. } => m.phase_done(phase, hosts),
                Live::Validated { .. } | Live::HostFailed { .. } => {}
            }
        }
        match event {
            Live::Validated { target, targets } => {
                let line = stormark_report::targets_line(*target, targets);
                if !self.target_said && !line.is_empty() {
                    self.say(&line);
                }
                self.target_said = true;
            }
            Live::PhaseStarted { name } => {
                self.current = name.to_string();
                self.failed.clear();
            }
            Live::Second {
                phase,
                interval,
                hosts,
            } => {
                if *phase != self.current {
                    // The preparation: no PhaseStarted of its own.
                    self.current = phase.to_string();
                    self.planned = None;
                }
                if self.pace == Pace::Off {
                    return;
                }
                let slowest = (hosts.len() > 1)
                    .then(|| {
                        hosts
                            .iter()
                            .map(|(h, ops)| (*h, ops.iter().map(|(_, c)| c.ops).sum::<u64>()))
                            .min_by_key(|(_, n)| *n)
                    })
                    .flatten()
                    .map(|(h, n)| (h, n as f64 * 1e9 / interval.duration_ns.max(1) as f64));
                let preparing = *phase == "prepare";
                let now = Now {
                    phase,
                    place: (!preparing).then_some((self.phase, self.total)),
                    bounded: self.bounded,
                    elapsed_s: u64::from(interval.t_s) + 1,
                    planned_s: self.planned.filter(|_| !preparing).map(|d| d.as_secs()),
                    interval,
                    slowest,
                };
                self.progress(&now);
            }
            Live::PhaseDone {
                phase, findings, ..
            } => {
                let text = if !stormark_report::is_step(phase) {
                    let failed: Vec<&str> = self.failed.iter().map(String::as_str).collect();
                    let mut text = stormark_report::phase_table(phase, &failed);
                    text.push_str(&stormark_report::findings_text(findings));
                    text
                } else if phase.kind() == PhaseKind::SearchStep {
                    // Said once the search has judged it, with its verdict.
                    String::new()
                } else {
                    stormark_report::step_line(phase)
                };
                self.phases_said += 1;
                if !text.is_empty() {
                    self.say(&text);
                }
            }
            Live::HostFailed { host, message } => {
                self.failed.push(host.to_string());
                // Said even with --quiet: the run goes on without this host, or stops.
                let clear = self.line.clear();
                let _ = writeln!(std::io::stderr(), "{clear}agent {host} failed: {message}");
            }
        }
    }

    /// The live line redrawn, or a progress line when one is due.
    fn progress(&mut self, now: &Now<'_>) {
        match self.pace {
            Pace::Off => {}
            Pace::Line => {
                let text = self.line.show(&now.text());
                let mut err = std::io::stderr();
                let _ = err.write_all(text.as_bytes());
                let _ = err.flush();
            }
            Pace::Every(every) => {
                // Counted in measured seconds, not by the clock: seconds close about a second
                // apart, two at once after a late one, and each is said when `every` has
                // passed in them (a phase's last, partial second adds what it lasted).
                self.since_progress += Duration::from_nanos(now.interval.duration_ns);
                if self.since_progress + Duration::from_millis(100) >= every {
                    self.since_progress = Duration::ZERO;
                    self.say(&format!("progress: {}\n", now.text()));
                }
            }
        }
    }

    /// Clears the live line (the run is over).
    pub(crate) fn finish(&mut self) {
        let clear = self.line.clear();
        let _ = std::io::stderr().write_all(clear.as_bytes());
    }
}

/// How long a stage is planned to measure: its longest job's time (the seconds of a phase are
/// counted after the ramp); `None` when a job runs to the end of its work (no time given).
fn stage_length(workload: &Workload, stage: usize) -> Option<Duration> {
    let stages = workload.stages();
    let jobs = stages.get(stage)?;
    jobs.iter()
        .map(|j| j.time)
        .try_fold(Duration::ZERO, |most, d| d.map(|d| most.max(d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_and_quiet_choose_the_pace() {
        assert_eq!(Pace::choose(None, false, true), Ok(Pace::Line));
        assert_eq!(
            Pace::choose(None, false, false),
            Ok(Pace::Every(DEFAULT_PROGRESS))
        );
        assert_eq!(
            Pace::choose(Some("1s"), false, true),
            Ok(Pace::Every(Duration::from_secs(1)))
        );
        assert_eq!(Pace::choose(Some("0"), false, false), Ok(Pace::Off));
        assert_eq!(Pace::choose(Some("5s"), true, false), Ok(Pace::Off));
        assert_eq!(Pace::choose(None, true, true), Ok(Pace::Off));
        let err = Pace::choose(Some("often"), false, false).unwrap_err();
        assert!(
            err.starts_with("--progress often: expected a duration"),
            "{err}"
        );
        assert!(Pace::choose(Some("1ms"), false, false).is_err());
    }
}
