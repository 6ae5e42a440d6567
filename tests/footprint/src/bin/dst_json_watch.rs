//! The core with one zone with daylight saving, its configuration loaded
//! from AgentScope's JSON with a watch that has both time rules, one step
//! with a live reading.
#![no_std]
#![no_main]

use core::hint::black_box;

use envaware::{ConfigBuf, ExtraFields};

#[no_mangle]
pub extern "C" fn _start() -> ! {
    let mut buf: ConfigBuf<512, 4, 4> = ConfigBuf::with_capacity();
    let injection = black_box(
        r#"{"timezone": "Europe/Berlin", "time_interval": "0.25", "extra_fields": {"robot": "rover"},
            "watch": {"temperature": {"change": 1, "min_interval": 60, "max_interval": 1800}}}"#,
    );
    let context = black_box(r#"{"trigger_ratio": 0.8, "reserve_ratio": 0.1}"#);
    if buf.load_injection(injection).is_ok() && buf.load_context(context).is_ok() {
        let readings = [("temperature", black_box("23.4 °C"))];
        let mut live = ExtraFields::Slice(&readings);
        black_box(envaware_footprint::one_step_with(buf.config(), &mut live));
    }
    loop {}
}
