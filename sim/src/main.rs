//! `envaware-sim`: the host tool that drives the envaware core.
#![forbid(unsafe_code)]
#![deny(
    missing_docs,
    missing_debug_implementations,
    unused_qualifications,
    rustdoc::broken_intra_doc_links
)]

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[cfg(feature = "fleet")]
mod fleet;
mod otel;
mod plot;
mod record;
mod replay;
mod tune;

use envaware_sim::{fuzz, model_server, request, scenario};

/// Most sessions `fuzz` runs: it bounds the run's time.
const MAX_CASES: u64 = 1_000_000;

/// An integer option's value; out of `MIN..=MAX` it is refused with the
/// range (clap names the option).
fn in_range<const MIN: u64, const MAX: u64>(text: &str) -> Result<u64, String> {
    text.parse::<u64>()
        .ok()
        .filter(|n| (MIN..=MAX).contains(n))
        .ok_or_else(|| format!("expected an integer in {MIN}..={MAX}"))
}

#[derive(Parser)]
#[command(
    name = "envaware-sim",
    version,
    about = "Evaluate envaware's injection rules on the host"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate scenarios (JSON Lines, scenario format v1) and print one
    /// result line for each, in order.
    Eval {
        /// The scenario file; standard input when absent or `-`.
        file: Option<PathBuf>,
    },
    /// Replay a session trace (JSON Lines of events) or an AgentScope
    /// context dump with a simulated clock, printing the hints as they
    /// would be injected.
    Replay(ReplayArgs),
    /// Fuzz the injection rules: random agent sessions through the core,
    /// step by step, against an independent reference model (and the
    /// incremental tracker against the full scan). Shrinks a mismatch and
    /// writes it as scenario JSON Lines for `eval`.
    Fuzz(FuzzArgs),
    /// Serve scripted OpenAI Chat Completions replies on 127.0.0.1: the
    /// stand-in for a model endpoint (no model runs). Prints `listening on
    /// 127.0.0.1:PORT`, then answers each request with the script's next
    /// line; stops by itself after --max-requests or --idle-timeout.
    ModelServer(ModelServerArgs),
    /// Print a device's session log (a host's log file, or a flash image
    /// with --flash) as the replay's trace lines: one JSON line per event,
    /// each with its item's number under "#" (what `replay` replays).
    Log(LogArgs),
    /// Export a session as OpenTelemetry spans (OTLP over HTTP) to a
    /// collector or a trace UI (Phoenix, Langfuse, Jaeger): a GenAI `chat`
    /// span per step, whose input messages are the model's request with
    /// the hint in it, under an `invoke_agent` span per reply. With
    /// --follow, each step is sent as it is logged.
    Export(ExportArgs),
    /// Consume a fleet's session logs from an MQTT broker (topic
    /// `envaware/<device>/log`, QoS 1): verify each device's log as
    /// `replay` does, drop duplicates, refuse gaps, and write one row per
    /// step to a Parquet store partitioned by device and day (docs/fleet.md).
    /// Stops by itself; prints a summary line.
    #[cfg(feature = "fleet")]
    Fleet(fleet::FleetArgs),
    /// Simulate a fleet's devices: each runs a generated greenhouse session
    /// through a session log that is its outbox, published to an MQTT
    /// broker by the firmware's own uplink (`envaware-uplink`) over TCP,
    /// until every item is delivered. Prints a summary line.
    #[cfg(feature = "fleet")]
    Devices(fleet::devices::DevicesArgs),
}

/// `envaware-sim log`'s arguments.
#[derive(clap::Args, Debug)]
struct LogArgs {
    /// The log: a host's log file (`envaware_host::FileLog`), or with
    /// --flash a raw image of a device's log region.
    file: PathBuf,
    /// The file is a raw image of a device's log region.
    #[arg(long)]
    flash: bool,
    /// The device's session configuration (else the log's first header's).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// `envaware-sim export`'s arguments.
#[derive(clap::Args, Debug)]
struct ExportArgs {
    /// The session, as `replay` reads it: a trace, a device's log (or, with
    /// --flash, a raw image of its log region) or an AgentScope dump;
    /// `-` is standard input.
    source: PathBuf,
    /// The collector: `http://HOST:PORT`, to which `/v1/traces` is added
    /// (Phoenix: http://127.0.0.1:6006; an OpenTelemetry Collector:
    /// http://127.0.0.1:4318).
    #[arg(long, value_name = "URL")]
    otlp: String,
    /// `protobuf` (OTLP's default, the one Phoenix takes) or `json`.
    #[arg(long, value_name = "ENCODING", default_value = "protobuf", value_parser = encoding)]
    encoding: otel::otlp::Encoding,
    /// Follow the source as it grows, sending each step as soon as it is
    /// logged, until standard input ends or --idle-timeout.
    #[arg(long, conflicts_with = "flash")]
    follow: bool,
    /// With --follow: stop after SECS seconds with nothing new (fractions
    /// allowed). Without it a file is followed until the process is stopped.
    #[arg(long, value_name = "SECS", requires = "follow", value_parser = seconds)]
    idle_timeout: Option<std::time::Duration>,
    /// The source is a raw image of a device's log region (as `replay --flash`).
    #[arg(long)]
    flash: bool,
    /// The configuration at the start, as for `replay --config`.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The clock at the start (RFC 3339), as for `replay --now`.
    #[arg(long, value_name = "TIME")]
    now: Option<String>,
    /// The model's name: `gen_ai.request.model` and the spans' name
    /// (`chat NAME`); left out when not given.
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// `gen_ai.provider.name`: the request is OpenAI Chat Completions'.
    #[arg(long, value_name = "NAME", default_value = "openai")]
    provider: String,
    /// `device.id`, a resource attribute.
    #[arg(long, value_name = "ID")]
    device_id: Option<String>,
    /// The firmware's version: `service.version` and `envaware.firmware.version`.
    #[arg(long, value_name = "VERSION")]
    firmware_version: Option<String>,
    /// `service.name`.
    #[arg(long, value_name = "NAME", default_value = "envaware")]
    service_name: String,
    /// The session's id (`gen_ai.conversation.id`, and the seed of the
    /// trace and span ids); a random one by default.
    #[arg(long, value_name = "ID")]
    session_id: Option<String>,
    /// Phoenix's project (`openinference.project.name`); Phoenix's
    /// `default` when not given.
    #[arg(long, value_name = "NAME")]
    project: Option<String>,
    /// Write one JSON line per step sent: `{"step", "line", "seen_us",
    /// "sent_us", "acked_us"}` (Unix microseconds: its line read, its span
    /// sent, the collector's acknowledgement).
    #[arg(long, value_name = "FILE")]
    timings: Option<PathBuf>,
    /// Each request's bound, in seconds.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = seconds)]
    timeout: std::time::Duration,
}

/// `--encoding`.
fn encoding(text: &str) -> Result<otel::otlp::Encoding, String> {
    match text {
        "protobuf" => Ok(otel::otlp::Encoding::Protobuf),
        "json" => Ok(otel::otlp::Encoding::Json),
        other => Err(format!("{other:?}: expected protobuf or json")),
    }
}

/// `envaware-sim model-server`'s arguments.
#[derive(clap::Args, Debug)]
struct ModelServerArgs {
    /// The replies, JSON Lines, one per request in order: `{"content":
    /// "text"}`, `{"tool_calls": [{"id", "name", "arguments"}]}` (content
    /// too if wanted) or `{"status": 500, "body": "..."}`.
    #[arg(long, value_name = "FILE")]
    script: PathBuf,
    /// The port on 127.0.0.1; 0 is any free port.
    #[arg(long, value_name = "N", default_value_t = 0)]
    port: u16,
    /// Append one JSON line per request to FILE: `{"n", "path", "request",
    /// "reply", "status"}`, flushed each time.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Exit 0 after answering N requests (any status).
    #[arg(long, value_name = "N", value_parser = in_range::<1, { u64::MAX }>)]
    max_requests: Option<u64>,
    /// Exit 0 when no connection or data has come for SECS seconds
    /// (fractions allowed); also each connection's read timeout.
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = seconds)]
    idle_timeout: std::time::Duration,
}

/// Seconds, fractions allowed, from a millisecond to a day
/// (`--idle-timeout`, the fleet's `--idle-exit` and `--flush-secs`).
fn seconds(text: &str) -> Result<std::time::Duration, String> {
    match text.parse::<f64>() {
        Ok(s) if (0.001..=86_400.0).contains(&s) => Ok(std::time::Duration::from_secs_f64(s)),
        _ => Err("expected seconds in 0.001..=86400".into()),
    }
}

#[derive(clap::Args)]
struct FuzzArgs {
    /// Sessions to generate.
    #[arg(long, value_name = "N", default_value = "256", value_parser = in_range::<1, MAX_CASES>)]
    cases: u64,
    /// The generator's seed (the same seed, the same sessions).
    #[arg(long, default_value_t = 0x5EED)]
    seed: u64,
    /// Most events per session.
    #[arg(long, value_name = "N", default_value = "40", value_parser = in_range::<1, { fuzz::MAX_STEPS as u64 }>)]
    steps: u64,
    /// Most seconds to spend shrinking a failure; when they are up, the
    /// smallest failing session found so far is reported.
    #[arg(long, value_name = "SECONDS", default_value = "60", value_parser = shrink_time)]
    shrink_time: std::time::Duration,
    /// Where to write a mismatching session as scenario JSON Lines.
    #[arg(long, default_value = "fuzz-mismatch.jsonl")]
    out: PathBuf,
    /// Also write every step of the passing sessions to FILE, as scenario
    /// lines with the model's result under `expected` (to check the model
    /// against AgentScope itself).
    #[arg(long, value_name = "FILE")]
    emit: Option<PathBuf>,
    /// Fuzz against a deliberately broken model (to see a failure):
    /// `time-boundary` (`<` for `<=`), `tool-arguments` or
    /// `throttle-inclusive` (a watch throttled at `age <= min_interval`).
    #[arg(long, hide = true)]
    broken: Option<String>,
    /// Fuzz your own configuration: a JSON file holding a `config` trace
    /// event's value, kept fixed while the sessions vary. Prints how often
    /// each dimension fired per 100 steps and the longest hint.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// With --config: the device's hint buffer in bytes. A session where a
    /// hint does not fit is shrunk and written as a replay trace.
    #[arg(long, value_name = "N", requires = "config", value_parser = in_range::<1, { tune::MAX_HINT_CAPACITY as u64 }>)]
    hint_capacity: Option<u64>,
    /// With --config: where to write the shrunk session as a replay trace.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "fuzz-hint-too-long.trace.jsonl",
        requires = "config"
    )]
    trace_out: PathBuf,
    /// With --config: draw the timeline of the shrunk session (else of the
    /// session with the longest hint) to this SVG file.
    #[arg(long, value_name = "FILE.svg", requires = "config")]
    plot: Option<PathBuf>,
}

/// `--shrink-time`: seconds, fractions allowed, from a millisecond to a day.
fn shrink_time(text: &str) -> Result<std::time::Duration, String> {
    let max = fuzz::MAX_SHRINK_TIME.as_secs_f64();
    match text.parse::<f64>() {
        Ok(s) if (0.001..=max).contains(&s) => Ok(std::time::Duration::from_secs_f64(s)),
        _ => Err(format!("expected seconds in 0.001..={max}")),
    }
}

/// Writes to standard output; a reader that went away (`| head`) is not
/// an error. Returns whether the text was written or the reader is gone.
fn print_out(text: &str) -> bool {
    match io::stdout().lock().write_all(text.as_bytes()).and_then(|()| io::stdout().lock().flush())
    {
        Ok(()) => true,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => true,
        Err(e) => {
            eprintln!("envaware-sim: {e}");
            false
        }
    }
}

/// `fuzz --config`: the user's configuration over random sessions.
fn tune_main(args: &FuzzArgs, path: &std::path::Path) -> ExitCode {
    let config = match std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("envaware-sim: cannot read {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let options = tune::TuneOptions {
        config,
        hint_capacity: args.hint_capacity.map(|n| n as usize),
        cases: args.cases as u32,
        seed: args.seed,
        steps: args.steps as usize,
        shrink_time: args.shrink_time,
    };
    let report = match tune::tune(&options) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("envaware-sim: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let mut text = tune::summary(&report, options.hint_capacity);
    let plotted = report.shrunk.as_ref().map_or(&report.longest_trace, |s| &s.0);
    if let Some((trace, ..)) = &report.shrunk {
        let comment = serde_json::json!({"#": format!("envaware-sim fuzz --config {}: shrunk session whose hint does not fit", path.display())});
        match std::fs::write(&args.trace_out, format!("{comment}\n{trace}")) {
            Ok(()) => {
                let out = args.trace_out.display();
                let cap = options.hint_capacity.unwrap_or_default();
                let _ = writeln!(
                    text,
                    "wrote {out}; replay it: envaware-sim replay {out} --hint-capacity {cap}"
                );
            }
            Err(e) => eprintln!("envaware-sim: cannot write {}: {e}", args.trace_out.display()),
        }
    }
    if let Some(svg) = &args.plot {
        let opts = replay::Options {
            json: true,
            hint_capacity: options.hint_capacity,
            ..replay::Options::default()
        };
        let drawn = replay::replay_with_records(plotted, &opts, &mut io::sink(), None)
            .map_err(|e| e.to_string())
            .and_then(|(_, records)| {
                plot::render(&records, "envaware-sim fuzz --config: a session")
            })
            .and_then(|s| std::fs::write(svg, s).map_err(|e| e.to_string()));
        match drawn {
            Ok(()) => eprintln!("wrote the timeline to {}", svg.display()),
            Err(e) => eprintln!("envaware-sim: cannot draw {}: {e}", svg.display()),
        }
    }
    let written = print_out(&text);
    if report.shrunk.is_some() || !written {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn fuzz_main(args: FuzzArgs) -> ExitCode {
    if let Some(path) = args.config.clone() {
        return tune_main(&args, &path);
    }
    let broken = match args.broken.as_deref() {
        None => None,
        Some("time-boundary") => Some(envaware_sim::model::Breakage::TimeBoundaryStrict),
        Some("tool-arguments") => Some(envaware_sim::model::Breakage::ToolErrorIgnoresArguments),
        Some("throttle-inclusive") => Some(envaware_sim::model::Breakage::ThrottleInclusive),
        Some(other) => {
            eprintln!("envaware-sim: unknown --broken {other:?}");
            return ExitCode::from(2);
        }
    };
    let options = fuzz::FuzzOptions {
        cases: args.cases as u32,
        seed: args.seed,
        steps: args.steps as usize,
        model: envaware_sim::model::Model { broken },
        progress: true,
        emit: args.emit,
        shrink_time: args.shrink_time,
    };
    let report = match fuzz::fuzz(&options) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("envaware-sim: {e}");
            return ExitCode::from(2);
        }
    };
    let mut text = fuzz::summary(&report.stats);
    if let Some((case, mismatch)) = report.failure {
        if let Some(took) = report.shrink_cut {
            let _ = writeln!(
                text,
                "shrinking stopped at its bound (--shrink-time {}) after {:.1} s: the session below is the smallest found by then",
                args.shrink_time.as_secs_f64(),
                took.as_secs_f64()
            );
        }
        text.push_str(&fuzz::describe(&case, &mismatch));
        let lines: String = mismatch.scenarios.iter().map(|l| format!("{l}\n")).collect();
        match std::fs::write(&args.out, lines) {
            Ok(()) => {
                let _ = writeln!(
                    text,
                    "wrote the session's {} steps to {} (the last one mismatches); replay: envaware-sim eval {}",
                    mismatch.scenarios.len(),
                    args.out.display(),
                    args.out.display()
                );
            }
            Err(e) => eprintln!("envaware-sim: cannot write {}: {e}", args.out.display()),
        }
        print_out(&text);
        return ExitCode::FAILURE;
    }
    let silent = report.stats.silent_dimensions();
    if !silent.is_empty() {
        let _ = writeln!(text, "never fired: {}", silent.join(", "));
    }
    if print_out(&text) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}

/// Runs `envaware-sim eval`: whether every line was valid. A reader that
/// went away (`| head`) ends the run as the end of the input would.
fn eval(mut input: Box<dyn BufRead>) -> io::Result<bool> {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut all_valid = true;
    let mut bytes = Vec::new();
    let mut number = 0usize;
    let gone = |e: io::Error| if e.kind() == io::ErrorKind::BrokenPipe { Ok(()) } else { Err(e) };
    // Lines are read as bytes: one that is not UTF-8 is answered with an
    // error naming it, and the run goes on.
    while {
        bytes.clear();
        input.read_until(b'\n', &mut bytes)? > 0
    } {
        number += 1;
        let raw = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let result = match std::str::from_utf8(raw) {
            // A blank line is not a scenario: skip it rather than fail the run.
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => scenario::evaluate_line(line, number).to_json(),
            Err(_) => serde_json::json!({ "error": format!("line {number}: not valid UTF-8") }),
        };
        all_valid &= result.get("error").is_none();
        let written = serde_json::to_writer(&mut out, &result)
            .map_err(io::Error::from)
            .and_then(|()| out.write_all(b"\n"));
        if let Err(e) = written {
            return gone(e).map(|()| all_valid);
        }
    }
    out.flush().or_else(gone)?;
    Ok(all_valid)
}

/// `envaware-sim replay`'s arguments.
#[derive(clap::Args, Debug)]
struct ReplayArgs {
    /// The trace (JSON Lines of events) or AgentScope context dump;
    /// standard input when absent or `-`.
    file: Option<PathBuf>,
    /// Print one `eval` result line for each step instead of the report.
    #[arg(long)]
    json: bool,
    /// Write each step's scenario (format v1) to this file: `eval` on it
    /// prints the same lines as `--json`.
    #[arg(long, value_name = "FILE")]
    emit_scenarios: Option<PathBuf>,
    /// The clock at the start (RFC 3339); a dump runs at this time, else at
    /// the system time.
    #[arg(long, value_name = "TIME")]
    now: Option<String>,
    /// The agent's name at the start.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// A JSON file holding the configuration at the start, as a `config`
    /// event's value (`agent_name`, `injection_config`, `context_config`,
    /// `context_size`, `input_tokens`).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The input token count at the start.
    #[arg(long, value_name = "N")]
    tokens: Option<i64>,
    /// Draw the session's timeline to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// The device's hint buffer in bytes, 1 to 1048576: a longer hint is
    /// reported as `HintTooLong` and not appended; the exit status is then 1.
    #[arg(long, value_name = "N", value_parser = replay::parse_hint_capacity)]
    hint_capacity: Option<usize>,
    /// Decide each step by the full scan of the context alone, as before
    /// the tracker (quadratic in the session's length). By default each
    /// step is decided by the core's tracker, as on a device, and checked
    /// against the full scan within a budget of reads per step.
    #[arg(long)]
    full_scan: bool,
    /// The file is a raw image of a device's log region (the firmware's
    /// sequential-storage queue: 1 KiB pages of 4-byte words, as `cargo
    /// xtask demo` saves it): its items are replayed as a session log.
    #[arg(long)]
    flash: bool,
    /// With --json: add to each step's line the model request as it stands
    /// after the step's hint (`"request"`: the `messages` array; `openai`:
    /// Chat Completions, as AgentScope's `OpenAIChatFormatter`).
    #[arg(long, value_name = "FORMAT", requires = "json", value_parser = replay::parse_request_format)]
    request: Option<replay::RequestFormat>,
    /// Print, instead of the report, how much of each step's OpenAI request
    /// the next step's request starts with byte for byte (what a prompt
    /// cache reuses), and why the rest is not.
    #[arg(long, conflicts_with_all = ["json", "emit_scenarios", "plot"])]
    prompt_cache: bool,
}

/// Runs `envaware-sim log`: exit 0 with the lines printed, 1 on a log that
/// cannot be read, 2 on an I/O error.
fn log_main(args: LogArgs) -> ExitCode {
    let fail = |what: String, code: u8| {
        eprintln!("envaware-sim log: {what}");
        ExitCode::from(code)
    };
    let bytes = match std::fs::read(&args.file) {
        Ok(bytes) => bytes,
        Err(e) => return fail(format!("cannot read {}: {e}", args.file.display()), 2),
    };
    let config = match args.config.as_ref().map(std::fs::read_to_string) {
        Some(Err(e)) => return fail(format!("cannot read the configuration: {e}"), 2),
        Some(Ok(text)) => Some(text),
        None => None,
    };
    match envaware_sim::device_log::lines_of(&bytes, args.flash, config.as_deref()) {
        Ok(Some((lines, torn))) => {
            if let Some(note) = envaware_sim::device_log::torn_note(torn) {
                eprintln!("envaware-sim log: {note}");
            }
            print!("{lines}");
            ExitCode::SUCCESS
        }
        Ok(None) => fail(
            format!(
                "{}: not a device's log (a host's log file, or a flash image with --flash)",
                args.file.display()
            ),
            1,
        ),
        Err(e) => fail(e, 1),
    }
}

/// Runs `envaware-sim replay`: exit 0 when the whole trace ran, 1 on an
/// invalid event (the steps before it are printed), 2 on an I/O error.
fn replay_main(args: ReplayArgs) -> ExitCode {
    use std::io::Read;
    let fail = |what: String, code: u8| {
        eprintln!("envaware-sim replay: {what}");
        ExitCode::from(code)
    };
    let mut bytes = Vec::new();
    let read = match &args.file {
        Some(path) if path.as_os_str() != "-" => std::fs::read(path).map(|b| bytes = b),
        _ => io::stdin().read_to_end(&mut bytes).map(drop),
    };
    if let Err(e) = read {
        return fail(format!("cannot read the trace: {e}"), 2);
    }
    let config = match &args.config {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(t) => Some(t),
            Err(e) => return fail(format!("cannot read {}: {e}", path.display()), 2),
        },
        None => None,
    };
    // A device's log: a flash image, or a host's log file (its magic).
    match envaware_sim::device_log::lines_of(&bytes, args.flash, config.as_deref()) {
        Ok(Some((lines, torn))) => {
            if let Some(note) = envaware_sim::device_log::torn_note(torn) {
                eprintln!("envaware-sim replay: {note}");
            }
            bytes = lines.into_bytes();
        }
        Ok(None) => {}
        Err(e) => return fail(e, 1),
    }
    // Bytes that are not UTF-8 end the trace at their line, as an invalid
    // event does: the lines before it are replayed.
    let (text, bad_line) = replay::utf8_prefix(&bytes);
    let mut emit_file = match &args.emit_scenarios {
        Some(path) => match File::create(path) {
            Ok(f) => Some(BufWriter::new(f)),
            Err(e) => return fail(format!("cannot create {}: {e}", path.display()), 2),
        },
        None => None,
    };
    let opts = replay::Options {
        json: args.json || args.prompt_cache,
        now: args.now,
        agent: args.agent,
        config,
        tokens: args.tokens,
        hint_capacity: args.hint_capacity,
        full_scan: args.full_scan,
        request: if args.prompt_cache { Some(replay::RequestFormat::Openai) } else { args.request },
    };
    if args.prompt_cache {
        let mut lines = Vec::new();
        let result = replay::replay(text, &opts, &mut lines, None);
        let parsed: Vec<serde_json::Value> = String::from_utf8_lossy(&lines)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        print!("{}", request::cache_report(&request::cache_steps(&parsed)));
        return match result {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => fail(e.to_string(), 1),
        };
    }
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let result = replay::replay_with_records(
        text,
        &opts,
        &mut out,
        emit_file.as_mut().map(|f| f as &mut dyn Write),
    );
    let flushed = out.flush().and_then(|()| emit_file.as_mut().map_or(Ok(()), Write::flush));
    match (result, flushed) {
        (Err(replay::ReplayError::Io(e)), _) | (Ok(_), Err(e)) => fail(e.to_string(), 2),
        (Err(e), _) => fail(e.to_string(), 1),
        (Ok(_), Ok(())) if bad_line.is_some() => {
            fail(format!("line {}: not valid UTF-8", bad_line.unwrap_or(0)), 1)
        }
        (Ok((summary, records)), Ok(())) => {
            if let replay::Input::DeviceLog { streamed, skipped, first_skipped } = summary.input {
                // Never a line ignored without a word.
                eprintln!(
                    "a device log: read its {streamed} streamed lines; skipped its {skipped} other lines (the first: line {first_skipped})"
                );
            }
            if !opts.json {
                let checked = summary.cross_check.map_or(String::new(), |c| {
                    format!(
                        "; the tracker decided each step, {} checked against the full scan",
                        c.checked
                    )
                });
                eprintln!("{} steps, {} hints{checked}", summary.steps, summary.hints);
            }
            if let Some(path) = &args.plot {
                let name = args
                    .file
                    .as_ref()
                    .and_then(|p| p.file_name())
                    .map_or("standard input".into(), |n| n.to_string_lossy());
                let written = plot::render(&records, &format!("envaware session timeline: {name}"))
                    .and_then(|svg| std::fs::write(path, svg).map_err(|e| e.to_string()));
                match written {
                    Ok(()) => eprintln!("wrote the timeline to {}", path.display()),
                    Err(e) => return fail(format!("cannot write {}: {e}", path.display()), 2),
                }
            }
            let too_long = records.iter().filter(|r| r.too_long.is_some()).count();
            if too_long > 0 {
                let capacity = opts.hint_capacity.unwrap_or_default();
                return fail(
                    format!(
                        "{too_long} of {} steps made a hint longer than {capacity} bytes",
                        summary.steps
                    ),
                    1,
                );
            }
            ExitCode::SUCCESS
        }
    }
}

/// Runs `envaware-sim model-server`: exit 0 when it stopped by itself, 2
/// on a bad script, a log or port it cannot open, or an I/O error.
fn model_server_main(args: ModelServerArgs) -> ExitCode {
    let fail = |what: String| {
        eprintln!("envaware-sim model-server: {what}");
        ExitCode::from(2)
    };
    let text = match std::fs::read_to_string(&args.script) {
        Ok(t) => t,
        Err(e) => return fail(format!("cannot read {}: {e}", args.script.display())),
    };
    let script = match model_server::Script::parse(&text) {
        Ok(s) => s,
        Err(e) => return fail(format!("{}: {e}", args.script.display())),
    };
    let log = match &args.log {
        Some(path) => match std::fs::OpenOptions::new().create(true).append(true).open(path) {
            Ok(f) => Some(f),
            Err(e) => return fail(format!("cannot open {}: {e}", path.display())),
        },
        None => None,
    };
    let server = match model_server::Server::bind(args.port) {
        Ok(s) => s,
        Err(e) => return fail(format!("cannot bind 127.0.0.1:{}: {e}", args.port)),
    };
    // The one line on standard output: a caller reads the port from it.
    if !print_out(&format!("listening on 127.0.0.1:{}\n", server.port())) {
        return ExitCode::from(2);
    }
    let options = model_server::ServeOptions {
        log,
        max_requests: args.max_requests,
        idle_timeout: args.idle_timeout,
    };
    match server.serve(script, options) {
        Ok(summary) => {
            eprintln!("envaware-sim model-server: {summary}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(e.to_string()),
    }
}

/// Runs `envaware-sim export`: exit 0 when every step was sent, 1 when the
/// session stopped on an invalid line (the steps before it were sent), 2
/// when the source cannot be read or the collector did not take the spans.
fn export_main(args: ExportArgs) -> ExitCode {
    let fail = |what: String, code: u8| {
        eprintln!("envaware-sim export: {what}");
        ExitCode::from(code)
    };
    let config = match &args.config {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(t) => Some(t),
            Err(e) => return fail(format!("cannot read {}: {e}", path.display()), 2),
        },
        None => None,
    };
    let source = match args.source.as_os_str() == "-" {
        true => otel::Source::Stdin,
        false => otel::Source::File(args.source.clone()),
    };
    let opts = otel::Options {
        url: args.otlp.clone(),
        encoding: args.encoding,
        identity: otel::spans::Identity {
            session_id: args.session_id.unwrap_or_else(otel::spans::random_session_id),
            service_name: args.service_name,
            device_id: args.device_id,
            firmware_version: args.firmware_version,
            model: args.model,
            provider: args.provider,
            project: args.project,
        },
        timeout: args.timeout,
        flash: args.flash,
        follow: args.follow,
        idle: args.idle_timeout,
        timings: args.timings,
        replay: replay::Options {
            json: true,
            now: args.now,
            config,
            request: Some(replay::RequestFormat::Openai),
            ..replay::Options::default()
        },
    };
    match otel::export(&source, &opts) {
        Ok(s) => {
            eprintln!(
                "exported {} steps ({} with a hint) as {} spans in {} requests to {}",
                s.steps,
                s.hinted,
                s.spans,
                s.requests,
                otel::http::endpoint(&args.otlp).unwrap_or(args.otlp)
            );
            ExitCode::SUCCESS
        }
        Err(e @ (otel::ExportError::Replay(_) | otel::ExportError::NotUtf8 { .. })) => {
            fail(e.to_string(), 1)
        }
        Err(e) => fail(e.to_string(), 2),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Replay(args) => replay_main(args),
        Command::Fuzz(args) => fuzz_main(args),
        Command::ModelServer(args) => model_server_main(args),
        Command::Log(args) => log_main(args),
        Command::Export(args) => export_main(args),
        #[cfg(feature = "fleet")]
        Command::Fleet(args) => fleet::main(args),
        #[cfg(feature = "fleet")]
        Command::Devices(args) => fleet::devices::main(args),
        Command::Eval { file } => {
            let input: Box<dyn BufRead> = match file {
                Some(path) if path.as_os_str() != "-" => match File::open(&path) {
                    Ok(f) => Box::new(BufReader::new(f)),
                    Err(e) => {
                        eprintln!("envaware-sim: cannot open {}: {e}", path.display());
                        return ExitCode::from(2);
                    }
                },
                _ => Box::new(BufReader::new(io::stdin())),
            };
            match eval(input) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("envaware-sim: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}
