//! Build-time checks of the core.

fn main() {
    warn_whole_zone_database();
}

/// A bare-metal build that carries every chrono-tz zone links about 935 KB
/// of zone data, almost always by mistake: say so, and how to pick zones.
fn warn_whole_zone_database() {
    println!("cargo:rerun-if-env-changed=CHRONO_TZ_TIMEZONE_FILTER");
    let bare_metal = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "none");
    let filtered =
        std::env::var_os("CARGO_FEATURE_ZONE_FILTER").is_some() && std::env::var("CHRONO_TZ_TIMEZONE_FILTER").is_ok_and(|f| !f.is_empty());
    if bare_metal && !filtered {
        println!(
            "cargo:warning=envaware: built for a bare-metal target with the whole zone database (about 935 KB of flash); \
             enable the `zone-filter` feature and set CHRONO_TZ_TIMEZONE_FILTER (e.g. \"^Europe/Berlin$\") under [env] \
             in .cargo/config.toml: see the README's \"Footprint on devices\""
        );
    }
}
