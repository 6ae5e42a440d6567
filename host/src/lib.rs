//! envaware on a host: what a device has and a desktop does not.
//!
//! - [`FileLog`]: the journal's store, an append-only file of framed,
//!   CRC-checked records, one [`envaware::journal`] item each; a torn tail
//!   (what a power cut leaves of the last appends) is cut when the file is
//!   opened, damage in the middle is refused ([`FileLogError::Corrupt`]).
//!   The file's format and the rule that tells the two apart are in the
//!   [`file_log`] module's docs.
//! - [`SystemClock`]: the wall clock of `std` as an [`envaware::Clock`].
//!
//! A session journaled to a file, then restored from it after a restart:
//!
//! ```
//! use envaware::journal::{Event, Journal};
//! use envaware::{AgentContext, Clock, Config, Engine, StepInput};
//! use envaware_host::{FileLog, Sync, SystemClock};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = std::env::temp_dir().join(format!("envaware-host-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! let path = dir.join("session.log");
//! # let _ = std::fs::remove_file(&path);
//! let engine = Engine::new(Config::default())?;
//! let mut context: AgentContext<'_, 8, 32, 2048> = AgentContext::new(&engine, "rover");
//! let mut journal = Journal::new(&context);
//! let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
//!
//! let (mut log, opened) = FileLog::open(&path, Sync::EveryItem)?;
//! assert_eq!((opened.items, opened.torn), (0, None));
//! let n = journal.start(&context, &mut buf)?;
//! log.append(&buf[..n])?;
//! let items = journal.record(&mut context, &Event::User { name: "operator" }, &mut buf)?;
//! items.iter(&buf).try_for_each(|item| log.append(item))?;
//! let step = StepInput { tasks: Default::default(), cur_iter: 0, input_tokens: 900, context_size: 8192 };
//! let now = SystemClock.now();
//! let (outcome, items) = journal.step(&mut context, &step, now, &mut (), &mut hint, &mut buf)?;
//! assert!(outcome.hint.is_some()); // the first step tells the time
//! items.iter(&buf).try_for_each(|item| log.append(item))?;
//! drop(log);
//!
//! // After a restart: open the file (a torn tail is cut), check every
//! // item, then restore them into an empty context.
//! let (log, opened) = FileLog::open(&path, Sync::EveryItem)?;
//! assert_eq!(opened.items, log.len());
//! let mut restored: AgentContext<'_, 8, 32, 2048> = AgentContext::new(&engine, "rover");
//! let mut reader = Journal::new(&restored);
//! log.items().try_for_each(|item| reader.check(item))?;
//! for item in log.items() {
//!     reader.restore(&mut restored, item, &mut buf)?;
//! }
//! assert_eq!(restored.len(), context.len());
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![deny(
    missing_docs,
    missing_debug_implementations,
    unused_qualifications,
    rustdoc::broken_intra_doc_links
)]

mod clock;
pub mod file_log;

pub use self::clock::SystemClock;
pub use self::file_log::{FileLog, FileLogError, Opened, Sync, TornTail};
