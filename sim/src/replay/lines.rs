//! What each line of a replay's input is: a trace's event, or a line a
//! device streamed, decided by the line itself. An input is one or the
//! other: the first event line decides which, and an input that mixes
//! them is refused before any step runs, naming the first line that does
//! not fit. No line is ignored without a word: a device log's other lines
//! (its own log) are counted in [`Input::DeviceLog`], which the command
//! line reports.

use super::{ReplayError, STREAM_PREFIX};

/// What the input was read as.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// A trace: every line is an event, a comment or blank.
    #[default]
    Trace,
    /// An AgentScope context dump, replayed as one step.
    Dump,
    /// A device's log: its lines after [`STREAM_PREFIX`] were read as the
    /// trace; its other lines, the device's own log, were skipped.
    DeviceLog {
        /// Lines read as events.
        streamed: usize,
        /// Lines skipped.
        skipped: usize,
        /// The first skipped line's number (0 when none was).
        first_skipped: usize,
    },
}

/// One line, by its look.
#[derive(Clone, Copy)]
enum Kind<'t> {
    Blank,
    /// After the prefix, as the device streamed it.
    Streamed(&'t str),
    /// A JSON object: a trace's event.
    Event(&'t str),
    /// Anything else: a device's own log, or a broken trace line.
    Other(&'t str),
}

fn kind(line: &str) -> Kind<'_> {
    if let Some(streamed) = line.strip_prefix(STREAM_PREFIX) {
        return Kind::Streamed(streamed);
    }
    match line.trim() {
        "" => Kind::Blank,
        t if t.starts_with('{') => Kind::Event(line),
        _ => Kind::Other(line),
    }
}

fn numbered(text: &str) -> impl Iterator<Item = (usize, Kind<'_>)> {
    text.split('\n').enumerate().map(|(i, l)| (i + 1, kind(l)))
}

/// What `text` is, and its event lines with their numbers (from 1): in a
/// trace every line but blank ones (a line that is not an event fails
/// where it is read), in a device log the streamed lines.
///
/// # Errors
///
/// When a trace holds a streamed line, or a device log a trace event.
pub(super) fn event_lines(
    text: &str,
) -> Result<(Input, impl Iterator<Item = (usize, &str)> + '_), ReplayError> {
    let first = numbered(text).find(|(_, k)| matches!(k, Kind::Streamed(_) | Kind::Event(_)));
    let input = match first {
        Some((decided, Kind::Streamed(_))) => device_log(text, decided)?,
        Some((decided, _)) => {
            if let Some((line, _)) = numbered(text).find(|(_, k)| matches!(k, Kind::Streamed(_))) {
                let message = format!(
                    "a line streamed by a device (after {STREAM_PREFIX:?}) in a trace (line {decided} is a trace event): \
                     give the trace alone, or the device's log alone"
                );
                return Err(ReplayError::Invalid { line, message });
            }
            Input::Trace
        }
        None => Input::Trace,
    };
    let streamed = matches!(input, Input::DeviceLog { .. });
    let lines = numbered(text).filter_map(move |(line, k)| match (k, streamed) {
        (Kind::Streamed(event), true) => Some((line, event)),
        (Kind::Event(event) | Kind::Other(event), false) => Some((line, event)),
        _ => None,
    });
    Ok((input, lines))
}

/// A device log whose first event, at line `decided`, was streamed: every
/// other event must be too; the rest is the device's own log.
fn device_log(text: &str, decided: usize) -> Result<Input, ReplayError> {
    let (mut streamed, mut skipped, mut first_skipped) = (0, 0, 0);
    for (line, k) in numbered(text) {
        match k {
            Kind::Streamed(_) => streamed += 1,
            Kind::Event(_) => {
                let message = format!(
                    "a trace event in a device's log (line {decided} was streamed, after {STREAM_PREFIX:?}): \
                     give the device's log alone, or the trace alone"
                );
                return Err(ReplayError::Invalid { line, message });
            }
            Kind::Other(_) => {
                skipped += 1;
                if first_skipped == 0 {
                    first_skipped = line;
                }
            }
            Kind::Blank => {}
        }
    }
    Ok(Input::DeviceLog { streamed, skipped, first_skipped })
}

#[cfg(test)]
mod tests {
    use super::*;

    type Lines<'t> = Vec<(usize, &'t str)>;

    fn read(text: &str) -> Result<(Input, Lines<'_>), String> {
        event_lines(text).map(|(input, lines)| (input, lines.collect())).map_err(|e| e.to_string())
    }

    #[test]
    fn a_trace_is_every_line_but_blank_ones() {
        let (input, lines) = read("{\"a\": 1}\n\n  \nnot json\n{\"b\": 2}").unwrap();
        assert_eq!(input, Input::Trace);
        assert_eq!(lines, [(1, "{\"a\": 1}"), (4, "not json"), (5, "{\"b\": 2}")]);
    }

    #[test]
    fn a_device_log_is_its_streamed_lines_and_counts_the_rest() {
        let log = "INFO boot\nagentscope> {\"a\": 1}\nINFO read 21.5\n\nagentscope> {\"b\": 2}";
        let (input, lines) = read(log).unwrap();
        assert_eq!(input, Input::DeviceLog { streamed: 2, skipped: 2, first_skipped: 1 });
        assert_eq!(lines, [(2, "{\"a\": 1}"), (5, "{\"b\": 2}")]);
    }

    #[test]
    fn a_mix_is_refused_naming_the_first_line_that_does_not_fit() {
        let trace =
            "{\"step\": {}}\nINFO x\nagentscope> {\"user\": \"x\"}\n{\"step\": {}}\nagentscope> {}";
        let err = read(trace).unwrap_err();
        assert!(
            err.starts_with("line 3: a line streamed by a device")
                && err.contains("line 1 is a trace event"),
            "{err}"
        );
        let log = "INFO x\nagentscope> {\"step\": {}}\n{\"user\": \"x\"}\nagentscope> {}";
        let err = read(log).unwrap_err();
        assert!(
            err.starts_with("line 3: a trace event in a device's log")
                && err.contains("line 2 was streamed"),
            "{err}"
        );
    }
}
