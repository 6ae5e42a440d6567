//! envaware-sim as a library: the scenario format, the fuzzer with its
//! independent reference model, a device's log read from its flash (or
//! item by item as a fleet's devices publish it), the fleet store's Parquet
//! files, a fleet's generated greenhouse sessions, and a scripted Chat
//! Completions server (the stand-in for a model endpoint).
//! The `envaware-sim` binary is a thin command line over these.
#![forbid(unsafe_code)]
#![deny(
    missing_docs,
    missing_debug_implementations,
    unused_qualifications,
    rustdoc::broken_intra_doc_links
)]

pub mod device_log;
pub mod flash;
#[cfg(feature = "fleet")]
pub mod fleet_store;
pub mod fuzz;
pub mod greenhouse;
pub mod intern;
pub mod model;
pub mod model_server;
pub mod request;
pub mod scenario;
