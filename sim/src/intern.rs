//! Configurations and agent names loaded once and kept for the process.
//!
//! The core's `Engine`, its tracker and a log's watch list borrow the
//! configuration they were built from. A replay of one trace builds them on
//! its stack; the fleet consumer (`envaware-sim fleet`) keeps one replay per
//! device alive between messages, so what they borrow must outlive them.
//! The devices of a fleet share a few configurations: each distinct text is
//! loaded once and kept (a `&'static`), at most [`MAX_CONFIGS`] of them, so
//! a device cannot grow the process without bound by sending new ones.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::scenario::SimConfigBuf;

/// Most distinct configurations a process keeps (each is a
/// [`SimConfigBuf`], about 70 KiB).
pub const MAX_CONFIGS: usize = 256;

/// Most distinct agent names a process keeps.
pub const MAX_NAMES: usize = 65_536;

thread_local! {
    static CONFIGS: RefCell<HashMap<String, &'static SimConfigBuf>> = RefCell::new(HashMap::new());
    static NAMES: RefCell<HashMap<String, &'static str>> = RefCell::new(HashMap::new());
}

/// The configuration kept under `key`, loaded by `load` into an empty
/// buffer the first time.
///
/// # Errors
///
/// `load`'s error (nothing is kept then), or more than [`MAX_CONFIGS`]
/// distinct keys.
pub fn config(
    key: &str,
    load: impl FnOnce(&mut SimConfigBuf) -> Result<(), String>,
) -> Result<&'static SimConfigBuf, String> {
    if let Some(found) = CONFIGS.with(|c| c.borrow().get(key).copied()) {
        return Ok(found);
    }
    if CONFIGS.with(|c| c.borrow().len()) >= MAX_CONFIGS {
        return Err(format!(
            "more than {MAX_CONFIGS} distinct configurations in one process: refused"
        ));
    }
    let mut buf = Box::new(SimConfigBuf::with_capacity());
    load(&mut buf)?;
    let kept: &'static SimConfigBuf = Box::leak(buf);
    CONFIGS.with(|c| c.borrow_mut().insert(key.to_string(), kept));
    Ok(kept)
}

/// `name`, kept for the process.
///
/// # Errors
///
/// More than [`MAX_NAMES`] distinct names.
pub fn name(name: &str) -> Result<&'static str, String> {
    NAMES.with(|names| {
        let mut names = names.borrow_mut();
        if let Some(found) = names.get(name) {
            return Ok(*found);
        }
        if names.len() >= MAX_NAMES {
            return Err(format!("more than {MAX_NAMES} distinct agent names in one process"));
        }
        let kept: &'static str = Box::leak(name.to_string().into_boxed_str());
        names.insert(name.to_string(), kept);
        Ok(kept)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configuration_is_loaded_once_and_a_failed_load_keeps_nothing() {
        let mut loads = 0;
        let mut load = |buf: &mut SimConfigBuf| {
            loads += 1;
            crate::scenario::load_config(buf, Some(r#"{"timezone": "UTC"}"#), None)
        };
        let a = config("k1", &mut load).unwrap();
        let b = config("k1", &mut load).unwrap();
        assert!(std::ptr::eq(a, b));
        assert_eq!(loads, 1);
        let bad = config("k2", |buf| crate::scenario::load_config(buf, Some("[]"), None));
        assert!(bad.is_err());
        assert!(config("k2", |_| Ok(())).is_ok(), "the failed key was not kept");
        assert!(std::ptr::eq(name("Sprout").unwrap(), name("Sprout").unwrap()));
    }
}
