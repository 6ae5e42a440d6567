//! envaware-sim as a library: the scenario format, and the fuzzer with its
//! independent reference model. The `envaware-sim` binary is a thin
//! command line over these.

pub mod fuzz;
pub mod model;
pub mod scenario;
