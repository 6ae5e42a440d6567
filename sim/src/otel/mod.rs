//! `envaware-sim export --otlp URL SOURCE`: a session as OpenTelemetry
//! spans, sent to a collector or a trace UI (Phoenix, Langfuse, Jaeger,
//! AgentScope Studio) over OTLP/HTTP, so that the runtime state a model
//! was given shows where people already look at their agents' traces.
//!
//! The spans are made from the replay's per-step results, the same the
//! replay prints with `--json --request openai`: nothing here reads a
//! trace, a device log or a flash image itself (`steps`). Layers:
//!
//! - [`messages`]: the request's messages as the GenAI conventions' input
//!   messages (the hint a `user` text part, as the model received it);
//! - [`spans`]: steps to spans: a `chat` span per step under an
//!   `invoke_agent` span per reply, `envaware.hint` events saying why;
//! - [`otlp`]: OTLP protobuf and JSON bodies;
//! - [`http`]: the POST, and what a collector's answer means;
//! - [`follow`]: a growing log, handed on in whole lines.
//!
//! docs/otel.md is the reference: the attributes and why, the conventions'
//! version, Phoenix, the delay measured on the demo.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::replay::{self, ReplayError};

pub mod follow;
pub mod http;
pub mod messages;
pub mod otlp;
pub mod spans;

pub use follow::Source;
use otlp::Span;
use spans::{SpanBuilder, StepResult};

/// Why an export stopped.
#[derive(Debug)]
pub enum ExportError {
    /// `--otlp` is not a URL this exporter can send to.
    Url {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// No answer from the collector (refused, timed out, reset).
    Unreachable {
        /// The endpoint.
        url: String,
        /// The client's error.
        error: String,
    },
    /// The collector answered with a status other than 2xx.
    Refused {
        /// The endpoint.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The start of its answer, and a hint when the status says more.
        body: String,
    },
    /// The collector accepted the request but rejected spans in it.
    Rejected {
        /// The endpoint.
        url: String,
        /// Spans it rejected.
        rejected: i64,
        /// Spans sent in the request.
        sent: usize,
        /// Its message.
        message: String,
    },
    /// The source cannot be read.
    Source {
        /// The source's name.
        source: String,
        /// Why.
        error: std::io::Error,
    },
    /// A followed file got shorter than what was read of it.
    Shrunk {
        /// The file.
        path: PathBuf,
        /// Bytes read so far.
        read: u64,
        /// Its length now.
        now: u64,
    },
    /// The replay stopped (the steps before it were exported).
    Replay(ReplayError),
    /// A flash image that is not a device's log region.
    Flash(String),
    /// A line that is not UTF-8 (the steps before it were exported).
    NotUtf8 {
        /// Its number, from 1.
        line: usize,
    },
    /// A step's request could not be read as messages (a bug: never for
    /// what the replay writes).
    Step {
        /// The step's number.
        step: usize,
        /// What is wrong.
        error: String,
    },
    /// `--timings` cannot be written.
    Timings(std::io::Error),
}

impl std::fmt::Display for ExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExportError::Url { url, why } => write!(f, "--otlp {url}: {why}"),
            ExportError::Unreachable { url, error } => {
                write!(f, "no answer from the collector at {url}: {error}")
            }
            ExportError::Refused { url, status, body } => {
                write!(f, "the collector at {url} answered {status}: {body}")
            }
            ExportError::Rejected { url, rejected, sent, message } => write!(
                f,
                "the collector at {url} rejected {rejected} of the {sent} spans sent: {message}"
            ),
            ExportError::Source { source, error } => write!(f, "cannot read {source}: {error}"),
            ExportError::Shrunk { path, read, now } => write!(
                f,
                "{} got shorter ({now} bytes, {read} read): rewritten by another session? Follow it again",
                path.display()
            ),
            ExportError::Replay(e) => write!(f, "{e}"),
            ExportError::Flash(e) => write!(f, "{e}"),
            ExportError::NotUtf8 { line } => write!(f, "line {line}: not valid UTF-8"),
            ExportError::Step { step, error } => write!(f, "step {step}: {error}"),
            ExportError::Timings(e) => write!(f, "--timings: {e}"),
        }
    }
}

impl std::error::Error for ExportError {}

/// What to export, and where.
#[derive(Debug)]
pub struct Options {
    /// The collector.
    pub url: String,
    /// The body's encoding.
    pub encoding: otlp::Encoding,
    /// The session and the device the spans describe.
    pub identity: spans::Identity,
    /// Each request's bound.
    pub timeout: Duration,
    /// The source is a raw image of a device's log region.
    pub flash: bool,
    /// Follow the source as it grows (each step sent as it is read),
    /// until its end (a pipe) or `idle` without a new byte.
    pub follow: bool,
    /// With `follow`: the end, after this long without a new byte.
    pub idle: Option<Duration>,
    /// One JSON line per step sent: when it was read and when the
    /// collector acknowledged it.
    pub timings: Option<PathBuf>,
    /// How the replay starts (`--config`, `--now`, `--agent`).
    pub replay: replay::Options,
}

/// What an export did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Steps exported, each as one `chat` span.
    pub steps: usize,
    /// Of those, the steps that appended a hint.
    pub hinted: usize,
    /// Spans sent (steps and replies).
    pub spans: usize,
    /// Requests sent.
    pub requests: usize,
}

/// The replay's steps of `text`, and why it stopped early, if it did:
/// the replay runs with `--json --request openai`, and each step's line
/// is paired with its record. On an error the text before the failing
/// line is replayed again for the steps before it (the replay returns
/// records only for a whole run).
pub fn steps(text: &str, opts: &replay::Options) -> (Vec<StepResult>, Option<ReplayError>) {
    let run = |text: &str| -> Result<Vec<StepResult>, ReplayError> {
        let mut out = Vec::new();
        let (_, records) = replay::replay_with_records(text, opts, &mut out, None)?;
        let lines = String::from_utf8_lossy(&out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
            .collect::<Vec<Value>>();
        Ok(records
            .into_iter()
            .zip(lines)
            .map(|(record, line)| StepResult { record, line })
            .collect())
    };
    match run(text) {
        Ok(steps) => (steps, None),
        Err(e) => {
            let line = match &e {
                ReplayError::Invalid { line, .. } | ReplayError::Disagree { line, .. } => *line,
                ReplayError::Io(_) => 0,
            };
            let before: usize =
                text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
            let steps =
                if line > 1 { run(&text[..before]).unwrap_or_default() } else { Vec::new() };
            (steps, Some(e))
        }
    }
}

fn unix_micros(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64)
}

/// Sends what the builder makes: in `live` mode each span as soon as it
/// is made, else a reply's spans in one request once the reply is complete.
struct Exporter {
    builder: SpanBuilder,
    collector: http::Collector,
    live: bool,
    pending: Vec<Span>,
    /// The steps read when the pending ones were: `(step, line, seen at)`.
    pending_steps: Vec<(usize, usize, i64)>,
    summary: Summary,
    timings: Option<std::fs::File>,
}

impl Exporter {
    fn flush(&mut self) -> Result<(), ExportError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let sent = unix_micros(SystemTime::now());
        self.collector.send(&self.pending)?;
        let acked = unix_micros(SystemTime::now());
        self.summary.requests += 1;
        self.summary.spans += self.pending.len();
        self.pending.clear();
        if let Some(file) = self.timings.as_mut() {
            for (step, line, seen) in self.pending_steps.drain(..) {
                let t = serde_json::json!({"step": step, "line": line, "seen_us": seen, "sent_us": sent, "acked_us": acked});
                writeln!(file, "{t}").and_then(|()| file.flush()).map_err(ExportError::Timings)?;
            }
        }
        self.pending_steps.clear();
        Ok(())
    }

    /// Exports the steps past those exported already.
    fn steps(&mut self, steps: &[StepResult], seen: SystemTime) -> Result<(), ExportError> {
        for step in steps.iter().skip(self.summary.steps) {
            let now_ns = unix_micros(seen) as u64 * 1000;
            let (closed, span) = self
                .builder
                .step(step, now_ns)
                .map_err(|error| ExportError::Step { step: step.record.step, error })?;
            if let Some(reply) = closed {
                self.pending.push(reply);
                self.flush()?;
            }
            self.pending.push(span);
            self.pending_steps.push((step.record.step, step.record.line, unix_micros(seen)));
            self.summary.steps += 1;
            self.summary.hinted += usize::from(step.line.get("hint").is_some_and(Value::is_string));
            if self.live {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<Summary, ExportError> {
        if let Some(reply) = self.builder.finish() {
            self.pending.push(reply);
        }
        self.flush()?;
        Ok(self.summary.clone())
    }
}

/// Replays `bytes` (whole lines, or everything at the end) and exports
/// the steps not exported yet; the replay's error, if any, after them.
fn export_text(exporter: &mut Exporter, bytes: &[u8], opts: &Options) -> Result<(), ExportError> {
    let seen = SystemTime::now();
    let (text, bad_line) = replay::utf8_prefix(bytes);
    let (steps, error) = steps(text, &opts.replay);
    exporter.steps(&steps, seen)?;
    match (error, bad_line) {
        (Some(e), _) => Err(ExportError::Replay(e)),
        (None, Some(line)) => Err(ExportError::NotUtf8 { line }),
        (None, None) => Ok(()),
    }
}

/// Exports `source`: whole (each reply's spans in one request once it is
/// complete), or with `follow` step by step as it grows.
///
/// # Errors
///
/// The first [`ExportError`]; the steps before it were sent.
pub fn export(source: &Source, opts: &Options) -> Result<Summary, ExportError> {
    let collector = http::Collector::new(&opts.url, opts.encoding, opts.timeout)?;
    let timings = match &opts.timings {
        Some(path) => Some(std::fs::File::create(path).map_err(ExportError::Timings)?),
        None => None,
    };
    let mut exporter = Exporter {
        builder: SpanBuilder::new(opts.identity.clone()),
        collector,
        live: opts.follow,
        pending: Vec::new(),
        pending_steps: Vec::new(),
        summary: Summary::default(),
        timings,
    };
    let exported = if opts.follow {
        // The replay runs again over the whole text only when the new
        // lines can hold a step (a `step` event names its key); the last
        // hand-on always runs.
        let mut replayed = 0;
        let config = opts.replay.config.as_deref();
        follow::follow(source, opts.idle, |bytes, last| {
            // A host's log file, as it grows: its whole items so far, read
            // again at each new record (a step is an item of its own).
            if bytes.starts_with(&envaware_host::MAGIC) {
                if !last && replayed == bytes.len() {
                    return Ok(());
                }
                replayed = bytes.len();
                // A record being appended is a torn tail until it is whole.
                let (lines, _) = envaware_sim::device_log::lines_of(bytes, false, config)
                    .map_err(ExportError::Flash)?
                    .unwrap_or_default();
                return export_text(&mut exporter, lines.as_bytes(), opts);
            }
            let new = &bytes[replayed.min(bytes.len())..];
            if !last && !new.windows(6).any(|w| w == b"\"step\"") {
                return Ok(());
            }
            replayed = bytes.len();
            export_text(&mut exporter, bytes, opts)
        })
    } else {
        source.read_all().and_then(|bytes| {
            // A device's log (a flash image, or a host's log file) is read
            // as the replay reads it.
            let config = opts.replay.config.as_deref();
            let lines = envaware_sim::device_log::lines_of(&bytes, opts.flash, config)
                .map_err(ExportError::Flash)?;
            let bytes = lines.map_or(bytes, |(lines, _)| lines.into_bytes());
            export_text(&mut exporter, &bytes, opts)
        })
    };
    // The reply open when the input ended, or stopped, is sent too.
    let finished = exporter.finish();
    exported.and(finished)
}
