//! The runner: generates cases with proptest, runs each through the world,
//! shrinks a mismatch to a minimal session and reports it.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::time::{Duration, Instant};

use proptest::test_runner::{
    Config as PtConfig, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner,
};
use serde_json::Value;

use super::case::{case_strategy, Case, CaseConfig};
use super::world::{model_config, rfc3339, run_case, Mismatch, Stats, DIMENSIONS};
use crate::model::Model;

/// How to run.
#[derive(Debug, Clone)]
pub struct FuzzOptions {
    /// Cases to generate.
    pub cases: u32,
    /// The seed of the generator.
    pub seed: u64,
    /// Most events per case.
    pub steps: usize,
    /// The model variant (a broken one to show the fuzzer catches it).
    pub model: Model,
    /// Show progress on standard error.
    pub progress: bool,
    /// Write every step of the passing sessions here, as scenario lines
    /// with the model's `expected` result (to check the model against
    /// AgentScope itself).
    pub emit: Option<std::path::PathBuf>,
    /// How long shrinking a mismatch may take; when it is up, the smallest
    /// failing session found so far is reported.
    pub shrink_time: Duration,
}

impl Default for FuzzOptions {
    fn default() -> Self {
        FuzzOptions {
            cases: 256,
            seed: 0x5EED,
            steps: 40,
            model: Model::FAITHFUL,
            progress: false,
            emit: None,
            shrink_time: DEFAULT_SHRINK_TIME,
        }
    }
}

/// Most events per case: a case's events are held in memory, and each step
/// scans the context, so the bound keeps both finite.
pub const MAX_STEPS: usize = 100_000;
/// Most shrinking time (a day): proptest counts it in `u32` milliseconds.
pub const MAX_SHRINK_TIME: Duration = Duration::from_secs(86_400);
/// Shrinking time when none is given.
pub const DEFAULT_SHRINK_TIME: Duration = Duration::from_secs(60);

/// Why a run could not start or finish.
#[derive(Debug)]
pub enum FuzzError {
    /// `steps` is outside `1..=MAX_STEPS`.
    Steps(usize),
    /// `shrink_time` is zero or over [`MAX_SHRINK_TIME`].
    ShrinkTime(Duration),
    /// The emitted scenarios could not be written.
    Emit(std::io::Error),
}

impl std::fmt::Display for FuzzError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FuzzError::Steps(n) => write!(f, "steps: {n} is not in 1..={MAX_STEPS}"),
            FuzzError::ShrinkTime(t) => write!(
                f,
                "shrink time: {} s is not in 0.001..={}",
                t.as_secs_f64(),
                MAX_SHRINK_TIME.as_secs()
            ),
            FuzzError::Emit(e) => write!(f, "cannot write the emitted scenarios: {e}"),
        }
    }
}

impl std::error::Error for FuzzError {}

/// What a run found.
#[derive(Debug)]
pub struct Report {
    /// Counts over the passing cases.
    pub stats: Stats,
    /// The minimal failing session, if any: the case, and the mismatch.
    pub failure: Option<(Case, Mismatch)>,
    /// Shrinking ran out of time: the failure is the smallest found by then,
    /// and how long shrinking took.
    pub shrink_cut: Option<Duration>,
}

fn seed_rng(seed: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(
            &(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes(),
        );
    }
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// Runs the fuzzer: generates, compares, and shrinks a failure.
///
/// # Errors
///
/// When an option is out of its range, or `options.emit` cannot be written.
pub fn fuzz(options: &FuzzOptions) -> Result<Report, FuzzError> {
    if !(1..=MAX_STEPS).contains(&options.steps) {
        return Err(FuzzError::Steps(options.steps));
    }
    let shrink_ms = u32::try_from(options.shrink_time.as_millis())
        .ok()
        .filter(|&ms| ms > 0 && options.shrink_time <= MAX_SHRINK_TIME);
    let Some(shrink_ms) = shrink_ms else { return Err(FuzzError::ShrinkTime(options.shrink_time)) };
    let emit = match &options.emit {
        Some(path) => Some(RefCell::new(std::io::BufWriter::new(
            std::fs::File::create(path).map_err(FuzzError::Emit)?,
        ))),
        None => None,
    };
    let emit_error = RefCell::new(None);
    let config = PtConfig {
        cases: options.cases,
        failure_persistence: None,
        max_shrink_iters: 4096,
        max_shrink_time: shrink_ms,
        max_global_rejects: 0,
        ..PtConfig::default()
    };
    let mut runner = TestRunner::new_with_rng(config, seed_rng(options.seed));
    let stats = RefCell::new(Stats::default());
    let bar = progress_bar(options);
    let shrinking = std::cell::Cell::new(None);
    let started = Instant::now();
    let result =
        runner.run(&case_strategy(options.steps), |case| match run_case(&case, options.model) {
            Ok((s, scenarios)) => {
                if shrinking.get().is_none() {
                    stats.borrow_mut().add(&s);
                    bar.tick(stats.borrow().cases);
                    if let Some(w) = &emit {
                        for line in scenarios {
                            if let Err(e) = writeln!(w.borrow_mut(), "{line}") {
                                emit_error.replace(Some(e));
                            }
                        }
                    }
                }
                Ok(())
            }
            Err(m) => {
                if shrinking.get().is_none() {
                    shrinking.set(Some(Instant::now()));
                    bar.note("mismatch found; shrinking");
                }
                Err(TestCaseError::fail(m.message))
            }
        });
    bar.finish(stats.borrow().cases, started.elapsed());
    if let Some(w) = emit {
        w.into_inner().flush().map_err(FuzzError::Emit)?;
    }
    if let Some(e) = emit_error.into_inner() {
        return Err(FuzzError::Emit(e));
    }
    // proptest stops shrinking at its time bound and keeps the smallest
    // failure so far; whether the bound was reached is read off the clock.
    let shrink_cut =
        shrinking.get().map(|t| t.elapsed()).filter(|&took| took >= options.shrink_time);
    let failure = match result {
        Ok(()) => None,
        Err(TestError::Fail(_, case)) => {
            let mismatch = run_case(&case, options.model).err().unwrap_or_else(|| Mismatch {
                message: "flaky: the shrunk case passed".into(),
                scenarios: vec![],
            });
            Some((case, mismatch))
        }
        Err(TestError::Abort(reason)) => Some((
            Case { config: config_default(), start_micros: 0, args: vec![], events: vec![] },
            Mismatch { message: format!("aborted: {reason}"), scenarios: vec![] },
        )),
    };
    Ok(Report { stats: stats.into_inner(), failure, shrink_cut })
}

pub(super) fn config_default() -> CaseConfig {
    CaseConfig {
        inject: true,
        zone: 0,
        format: 0,
        interval: 0,
        limit: 3,
        hint: 0,
        template: 0,
        source: 0,
        task_tools: 0,
        extra: vec![],
        emit: true,
        strict: false,
        trigger: 0,
        buffer: 0,
        deprecated_buffer: false,
        compression_tool: false,
        context_size: 0,
        watch: 0,
    }
}

/// Progress on standard error: a bar on a terminal, else a line every tenth.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    total: u64,
    lines: bool,
    next_line: std::cell::Cell<u64>,
}

fn progress_bar(options: &FuzzOptions) -> Progress {
    let total = u64::from(options.cases);
    if !options.progress {
        return Progress { bar: None, total, lines: false, next_line: 0.into() };
    }
    if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(total);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "fuzz {bar:40} {pos}/{len} cases {elapsed_precise} eta {eta} {msg}",
        ) {
            bar.set_style(style);
        }
        Progress { bar: Some(bar), total, lines: false, next_line: 0.into() }
    } else {
        Progress { bar: None, total, lines: true, next_line: (total / 10).max(1).into() }
    }
}

impl Progress {
    fn tick(&self, done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        } else if self.lines && done >= self.next_line.get() {
            eprintln!("fuzz: {done}/{} cases", self.total);
            self.next_line.set(self.next_line.get() + (self.total / 10).max(1));
        }
    }

    fn note(&self, msg: &'static str) {
        if let Some(bar) = &self.bar {
            bar.set_message(msg);
        } else if self.lines {
            eprintln!("fuzz: {msg}");
        }
    }

    fn finish(&self, done: u64, elapsed: Duration) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if self.bar.is_some() || self.lines {
            eprintln!("fuzz: {done} cases in {:.1} s", elapsed.as_secs_f64());
        }
    }
}

/// The summary printed at the end of a run.
pub fn summary(stats: &Stats) -> String {
    let mut s =
        format!("fuzz: {} cases, {} steps, {} hints\n", stats.cases, stats.steps, stats.hints);
    for d in DIMENSIONS {
        let _ = writeln!(s, "  {:<18} {}", d, stats.fired.get(d).copied().unwrap_or(0));
    }
    for (k, v) in &stats.fired {
        if !DIMENSIONS.contains(k) {
            let _ = writeln!(s, "  {:<18} {}", k, v);
        }
    }
    s
}

/// The minimal failing session, for humans.
pub fn describe(case: &Case, mismatch: &Mismatch) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "mismatch: {}", mismatch.message);
    let _ = writeln!(s, "minimal session (start {}):", rfc3339(case.start_micros));
    let _ = writeln!(s, "  config: {:?}", model_config(&case.config));
    let _ = writeln!(
        s,
        "  argument pool: {}",
        case.args.iter().map(Value::to_string).collect::<Vec<_>>().join(" | ")
    );
    for (i, e) in case.events.iter().enumerate() {
        let _ = writeln!(s, "  {i:>3}. {e:?}");
    }
    s
}
