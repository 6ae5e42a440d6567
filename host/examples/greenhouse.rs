//! A host agent loop written from the docs alone: the configuration file
//! the simulator reads (`ConfigBuf::load_session`), a sensor as a closure
//! (`LiveFn`), the wall clock (`SystemClock`), and the session logged to a
//! file (`Session` over `FileLog`). Run it twice: the second run restores
//! the first's session from the file and goes on where its reply stood.
//!
//! ```sh
//! cargo run -p envaware-host --example greenhouse -- /tmp/greenhouse.log
//! cargo run -p envaware-host --example greenhouse -- /tmp/greenhouse.log   # restores it
//! ```

use std::cell::Cell;

use envaware::journal::{Event, ItemError, LogError, Session};
use envaware::{Clock, ConfigBuf, Engine, LiveFn, StepInput, TaskCounts};
use envaware_host::{block_on, FileLog, Sync, SystemClock};

type Greenhouse<'e> = Session<'e, 16, 64, 8192>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).unwrap_or_else(|| "greenhouse.log".into());
    let mut config = ConfigBuf::new();
    let loaded = config.load_session(include_str!("../../examples/sprout.config.json"))?;
    let engine = Engine::new(loaded.config)?;
    let (mut buf, mut hint) = ([0u8; 4096], [0u8; 2048]);

    let (mut log, opened) = FileLog::open(&path, Sync::EveryItem)?;
    if let Some(torn) = opened.torn {
        println!("a torn tail was cut: {} bytes at {}", torn.dropped_bytes, torn.offset);
    }
    let mut session = match Greenhouse::restore(&engine, loaded.agent_name, log.items(), &mut buf) {
        Ok(session) => {
            println!("restored {} items, {} steps", log.len(), session.reply().steps);
            session
        }
        Err(LogError { index: 0, kind: ItemError::MissingHeader }) => {
            let mut session = Greenhouse::new(&engine, loaded.agent_name);
            block_on(session.start(&mut buf, &mut log))?;
            println!("a new session in {path}");
            session
        }
        Err(e) => return Err(format!("{path}: {e} (remove the file to start anew)").into()),
    };

    // The sensor: a closure the adapter calls when a hint needs it.
    let temperature = Cell::new(21.5 + session.reply().steps as f64);
    let mut sensor: LiveFn<'_, 1, 16, _> =
        LiveFn::new(["temperature"], |_, w| write!(w, "{:.1} °C", temperature.get()));
    let reply = session.reply();
    let mut cur_iter = reply.next_iter.unwrap_or(0);
    if session.context().is_empty() || cur_iter == 0 {
        block_on(session.record(&Event::User { name: "operator", text: "" }, &mut buf, &mut log))?;
        cur_iter = 0;
    }
    for _ in 0..3 {
        let step = StepInput {
            tasks: TaskCounts { pending: 1, in_progress: 0 },
            cur_iter,
            input_tokens: 900,
            context_size: loaded.context_size,
        };
        let now = SystemClock.now();
        let outcome =
            block_on(session.step(&step, now, &mut sensor, &mut hint, &mut buf, &mut log))?;
        match outcome.hint {
            Some(hint) => println!("step {cur_iter}: told\n{hint}"),
            None => println!("step {cur_iter}: nothing to tell"),
        }
        let call = Event::ToolCall { id: "c1", name: "OpenVent", input: "{\"vent\": 2}" };
        block_on(session.record(&call, &mut buf, &mut log))?;
        cur_iter += 1;
        temperature.set(temperature.get() + 1.0);
    }
    println!(
        "{} messages, {} items in {path}; the next step is cur_iter {}",
        session.context().len(),
        session.journal().items(),
        session.reply().next_iter.unwrap_or(0)
    );
    // What the next run will find: the file restores this very session.
    drop(log);
    let (log, _) = FileLog::open(&path, Sync::EveryItem)?;
    let again = Greenhouse::restore(&engine, loaded.agent_name, log.items(), &mut buf)?;
    if again.reply() != session.reply() || again.context().len() != session.context().len() {
        return Err(format!("{path} does not restore this session").into());
    }
    println!("checked: {path} restores this session ({} steps)", again.reply().steps);
    Ok(())
}
