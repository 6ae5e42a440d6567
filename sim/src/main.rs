//! `envaware-sim`: the host tool that drives the envaware core.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod replay;
mod scenario;

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
