//! Issue 37, the whole fleet in small: `cargo xtask fleet --devices 3
//! --steps 20 --faults` through its library function
//! ([`xtask::fleet::run`]): the QEMU board and two simulated devices
//! publish to a real Mosquitto, the broker is restarted, the board reset
//! and the consumer killed mid-run, and the store must hold every step of
//! every device once, nothing lost. Needs QEMU, `defmt-print`, the release
//! image, Mosquitto and the sim (`cargo xtask test` provides them all;
//! plain `cargo test` skips with a message). DuckDB from the test venv
//! counts the store when it is there, else the consumer's own reader.

use std::process::Command;

use xtask::fleet::{self, Options};
use xtask::needs;

fn options() -> Option<Options> {
    let elf = needs::or_skip(needs::built_file(
        "ENVAWARE_FIRMWARE_ELF",
        "firmware/target/thumbv7m-none-eabi/release/envaware-firmware",
    ))?;
    let mut options = Options::new(
        3,
        20,
        true,
        needs::or_skip(needs::tool("ENVAWARE_QEMU", "qemu-system-arm"))?,
        needs::or_skip(needs::tool("ENVAWARE_DEFMT_PRINT", "defmt-print"))?,
        elf,
        needs::or_skip(xtask::mqtt::find())?,
        needs::or_skip(needs::sim_binary())?,
        needs::workspace(),
        needs::workspace().join("tests/out/fleet-run"),
    );
    // DuckDB when the reference venv has it; the store's own reader else.
    options.python = needs::reference_python().ok().filter(|p| {
        Command::new(p).args(["-c", "import duckdb"]).status().is_ok_and(|s| s.success())
    });
    Some(options)
}

#[test]
fn a_small_fleet_with_faults_stores_every_step_once_and_loses_nothing() {
    let Some(options) = options() else { return };
    let report = fleet::run(&options).unwrap_or_else(|e| panic!("the fleet run: {e}"));
    for line in &report.lines {
        eprintln!("{line}");
    }
    eprintln!("{}", report.last_line());
    assert!(report.problems.is_empty(), "{:#?}", report.problems);
    // The board's 20 steps and its environment steps, the simulated
    // devices' 20 each: every one a row, once.
    let board = std::fs::read_to_string(options.dir.join("board.log")).expect("the board's log");
    assert!(board.contains("resetting the MCU after step 10"), "the board was reset");
    let board_steps = fleet::board_steps(&board) as u64;
    assert!(board_steps >= 20, "{board_steps}");
    assert_eq!(report.expected_rows, board_steps + 40);
    let published = report.published;
    assert!(published > 3 * 20, "{published}");
    assert_eq!(
        report.last_line(),
        format!(
            "fleet: devices 3, steps 20, items published {published}, rows {}, lost 0, duplicates 0",
            board_steps + 40
        )
    );
    // The figures before it.
    for what in [
        "items/s ingested",
        "publish -> row p50",
        "CPU per 1,000 items",
        "per step for the QEMU board",
    ] {
        assert!(report.lines.iter().any(|l| l.contains(what)), "{what}: {:#?}", report.lines);
    }
    assert!(
        report.lines[0].contains("equal to the replay of the items kept for 3 of 3 devices"),
        "{}",
        report.lines[0]
    );
}
