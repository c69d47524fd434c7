//! Writes the manual pages of `orrery` into the folder given: `orrery.1` and one page per command
//! (`orrery-run.1`, `orrery-servers-add.1`, ...), from the command line's own definitions, so they
//! say what `--help` says. `scripts/package.sh` puts them in the packages.

#[allow(dead_code)] // the grammar's fields are read by the command line, not here
#[path = "../src/cli.rs"]
mod cli;

use clap::CommandFactory;

fn main() {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: man FOLDER");
        std::process::exit(2);
    };
    let written = std::fs::create_dir_all(&dir).and_then(|()| clap_mangen::generate_to(cli::Cli::command(), &dir));
    if let Err(e) = written {
        eprintln!("man: cannot write the pages into {}: {e}", std::path::Path::new(&dir).display());
        std::process::exit(1);
    }
}
