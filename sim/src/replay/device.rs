//! A device's log replayed as its items arrive: the fleet consumer's
//! (`envaware-sim fleet`), one per device.

use std::io;

use super::decide::Decider;
use super::session::{Output, Session};
use super::{apply_line, configure_from_log, Options, ReplayError, Summary};
use crate::record::StepRecord;
use crate::scenario;

/// A device log replayed as its items arrive (the fleet consumer's, one per
/// device): the lines of each item, as [`envaware_sim::device_log::ItemLines`]
/// writes them, go through the same session and handlers as `replay` on the
/// whole log, and each step comes back as its record.
///
/// The first lines fed must hold the header that carries the log's
/// settings (`ItemLines` holds the items before it until it comes). The
/// engine and decider borrow configurations and agent names kept for the
/// process ([`envaware_sim::intern`]); a header builds them again, as a
/// whole replay does.
pub struct DeviceReplay {
    session: Session,
    decider: Option<Decider<'static>>,
    /// Trace lines fed so far: errors name the line, as in a whole replay.
    line: usize,
    opts: Options,
}

impl std::fmt::Debug for DeviceReplay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceReplay")
            .field("line", &self.line)
            .field("steps", &self.session.summary.steps)
            .finish_non_exhaustive()
    }
}

impl Default for DeviceReplay {
    fn default() -> Self {
        Self::new()
    }
}

impl DeviceReplay {
    /// A replay before the log's first item.
    pub fn new() -> Self {
        let mut session = Session::new();
        session.device_log = true;
        DeviceReplay { session, decider: None, line: 0, opts: Options::default() }
    }

    /// Steps and hints so far.
    pub fn summary(&self) -> &Summary {
        &self.session.summary
    }

    /// Replays `lines` (one item's or more, in order): what each step that
    /// ran did, with its line's item number (its `"#"`).
    ///
    /// # Errors
    ///
    /// What `replay` reports for the same lines: a step whose decision is
    /// not the one the device logged, a header of another configuration, an
    /// invalid event. The replay is then in no state to go on.
    pub fn feed(&mut self, lines: &str) -> Result<Vec<(u32, StepRecord)>, ReplayError> {
        let mut decider = match self.decider.take() {
            Some(decider) => decider,
            None => {
                configure_from_log(&mut self.session, lines)?;
                kept_decider(&self.session, self.line)?
            }
        };
        let mut sink = io::sink();
        let mut output = Output { out: &mut sink, emit: None, opts: &self.opts };
        let mut steps = Vec::new();
        for text in lines.lines() {
            self.line += 1;
            if apply_line(&mut self.session, &mut decider, &mut output, self.line, text)? {
                decider = kept_decider(&self.session, self.line)?;
            }
            if let Some(record) = self.session.records.pop() {
                steps.push((item_number(text), record));
            }
        }
        self.decider = Some(decider);
        Ok(steps)
    }
}

/// A device log line's item number (its `"#"`; 0 without one).
fn item_number(line: &str) -> u32 {
    #[derive(serde::Deserialize)]
    struct Numbered {
        #[serde(rename = "#")]
        number: u32,
    }
    serde_json::from_str::<Numbered>(line).map_or(0, |n| n.number)
}

/// The engine and decider of the session's configuration and agent, on a
/// configuration and a name kept for the process.
fn kept_decider(session: &Session, line: usize) -> Result<Decider<'static>, ReplayError> {
    let invalid = |message: String| ReplayError::Invalid { line, message };
    let buf = envaware_sim::intern::config(&session.config_key(), |buf| session.load(buf))
        .map_err(invalid)?;
    let engine = scenario::engine(buf.config()).map_err(|e| invalid(e.to_string()))?;
    let agent = envaware_sim::intern::name(&session.agent_name).map_err(invalid)?;
    Ok(Decider::new(engine, agent, &session.context, session.check))
}
