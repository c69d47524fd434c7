//! The process tests of `process.rs` again, with the spawner turned off (`ORRERY_SPAWNER=off`):
//! the engine forks each supervisor itself, the way it takes when the spawner cannot start.

/// Turns the spawner off before `main`, so before any test spawns (glibc runs `.init_array`).
#[used]
#[link_section = ".init_array"]
static SPAWNER_OFF: extern "C" fn() = spawner_off;

extern "C" fn spawner_off() {
    std::env::set_var("ORRERY_SPAWNER", "off");
}

#[path = "process.rs"]
mod process;
