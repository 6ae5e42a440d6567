//! `envaware-sim`: the host tool that drives the envaware core.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod plot;
mod replay;

use envaware_sim::{fuzz, scenario};

#[derive(Parser)]
#[command(name = "envaware-sim", version, about = "Evaluate envaware's injection rules on the host")]
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
    Replay(replay::ReplayArgs),
    /// Fuzz the injection rules: random agent sessions through the core,
    /// step by step, against an independent reference model (and the
    /// incremental tracker against the full scan). Shrinks a mismatch and
    /// writes it as scenario JSON Lines for `eval`.
    Fuzz(FuzzArgs),
}

#[derive(clap::Args)]
struct FuzzArgs {
    /// Sessions to generate.
    #[arg(long, default_value_t = 256)]
    cases: u32,
    /// The generator's seed (the same seed, the same sessions).
    #[arg(long, default_value_t = 0x5EED)]
    seed: u64,
    /// Most events per session.
    #[arg(long, default_value_t = 40)]
    steps: usize,
    /// Where to write a mismatching session as scenario JSON Lines.
    #[arg(long, default_value = "fuzz-mismatch.jsonl")]
    out: PathBuf,
    /// Also write every step of the passing sessions to FILE, as scenario
    /// lines with the model's result under `expected` (to check the model
    /// against AgentScope itself).
    #[arg(long, value_name = "FILE")]
    emit: Option<PathBuf>,
    /// Fuzz against a deliberately broken model (to see a failure):
    /// `time-boundary` (`<` for `<=`) or `tool-arguments`.
    #[arg(long, hide = true)]
    broken: Option<String>,
}

fn fuzz_main(args: FuzzArgs) -> ExitCode {
    let broken = match args.broken.as_deref() {
        None => None,
        Some("time-boundary") => Some(envaware_sim::model::Breakage::TimeBoundaryStrict),
        Some("tool-arguments") => Some(envaware_sim::model::Breakage::ToolErrorIgnoresArguments),
        Some(other) => {
            eprintln!("envaware-sim: unknown --broken {other:?}");
            return ExitCode::from(2);
        }
    };
    let options = fuzz::FuzzOptions {
        cases: args.cases,
        seed: args.seed,
        steps: args.steps,
        model: envaware_sim::model::Model { broken },
        progress: true,
        emit: args.emit,
    };
    let report = match fuzz::fuzz(&options) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("envaware-sim: cannot write the emitted scenarios: {e}");
            return ExitCode::from(2);
        }
    };
    print!("{}", fuzz::summary(&report.stats));
    if let Some((case, mismatch)) = report.failure {
        print!("{}", fuzz::describe(&case, &mismatch));
        let text: String = mismatch.scenarios.iter().map(|l| format!("{l}\n")).collect();
        match std::fs::write(&args.out, text) {
            Ok(()) => println!(
                "wrote the session's {} steps to {} (the last one mismatches); replay: envaware-sim eval {}",
                mismatch.scenarios.len(),
                args.out.display(),
                args.out.display()
            ),
            Err(e) => eprintln!("envaware-sim: cannot write {}: {e}", args.out.display()),
        }
        return ExitCode::FAILURE;
    }
    let silent = report.stats.silent_dimensions();
    if !silent.is_empty() {
        println!("never fired: {}", silent.join(", "));
    }
    ExitCode::SUCCESS
}

fn eval(input: Box<dyn BufRead>) -> io::Result<bool> {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut all_valid = true;
    for line in input.lines() {
        let line = line?;
        // A blank line is not a scenario: skip it rather than fail the run.
        if line.trim().is_empty() {
            continue;
        }
        let result = scenario::evaluate(&line);
        all_valid &= !matches!(result, scenario::Evaluation::Error(_));
        serde_json::to_writer(&mut out, &result.to_json())?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(all_valid)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Replay(args) => replay::main(args),
        Command::Fuzz(args) => fuzz_main(args),
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
