//! envaware on a host: what a device has and a desktop does not.
//!
//! - [`FileLog`]: the journal's store, an append-only file of framed,
//!   CRC-checked records, one [`envaware::journal`] item each, after a
//!   header ([`MAGIC`] and the file's salt); a torn tail
//!   (what a power cut leaves of the last appends) is cut when the file is
//!   opened, damage in the middle is refused ([`FileLogError::Corrupt`]).
//!   The file's format and the rule that tells the two apart are in the
//!   [`file_log`] module's docs; [`read_records`] reads a file's records
//!   without changing it.
//! - [`SystemClock`]: the wall clock of `std` as an [`envaware::Clock`].
//!
//! - [`block_on`]: drives a [`Session`](envaware::journal::Session)'s
//!   async calls on a thread (the file's appends complete at once).
//!
//! A session logged to a file, then restored from it after a restart:
//!
//! ```
//! use envaware::journal::{Event, Session};
//! use envaware::{Clock, Config, Engine, StepInput};
//! use envaware_host::{block_on, FileLog, Sync, SystemClock};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = std::env::temp_dir().join(format!("envaware-host-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! let path = dir.join("session.log");
//! # let _ = std::fs::remove_file(&path);
//! type Rover<'e> = Session<'e, 8, 32, 2048>;
//! let engine = Engine::new(Config::default())?;
//! let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
//!
//! let (mut log, opened) = FileLog::open(&path, Sync::EveryItem)?;
//! assert_eq!((opened.items, opened.torn), (0, None));
//! let mut session = Rover::new(&engine, "rover");
//! block_on(session.start(&mut buf, &mut log))?;
//! block_on(session.record(&Event::User { name: "operator", text: "" }, &mut buf, &mut log))?;
//! let step = StepInput { tasks: Default::default(), cur_iter: 0, input_tokens: 900, context_size: 8192 };
//! let outcome =
//!     block_on(session.step(&step, SystemClock.now(), &mut (), &mut hint, &mut buf, &mut log))?;
//! assert!(outcome.hint.is_some()); // the first step tells the time
//! drop(log);
//!
//! // After a restart: open the file (a torn tail is cut), and restore.
//! let (log, opened) = FileLog::open(&path, Sync::EveryItem)?;
//! assert_eq!(opened.items, 3); // the header, the user message, the step
//! let restored = Rover::restore(&engine, "rover", log.items(), &mut buf)?;
//! assert_eq!(restored.context().len(), session.context().len());
//! assert_eq!(restored.reply().next_iter, Some(1));
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

mod block_on;
mod clock;
pub mod file_log;

pub use self::block_on::block_on;
pub use self::clock::SystemClock;
pub use self::file_log::{
    read_records, FileLog, FileLogError, Opened, ReadError, Records, Sync, Tail, TornTail, MAGIC,
};
