//! Writes a large, valid antikythera blueprint (see the library docs for its shape).
//!
//!   gen_blueprint TASKS OUT.json [--seed N] [--lanes N] [--inner INNER.json] [--stats]
//!                 [--session-inputs SHARE [--produced]]
//!   gen_blueprint TASKS OUT.json --dense WIDTH
//!
//! The same arguments always give the same file. `--dense` writes fully connected layers of
//! WIDTH tasks instead (`orrery_bench::dense_layers`). `--inner` also writes the blueprint `inner`
//! that the composites call; `--stats` prints counts (edges, scopes, conditions...) as JSON.
//! `--session-inputs 0.875` makes that share of the tasks also read a session parameter, each a
//! warning of validation, the rest of the file unchanged; with `--produced` the start task
//! outputs that parameter, so they warn of nothing.
use orrery_bench::{dense_layers, generate, inner_blueprint, to_text, Config};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: gen_blueprint TASKS OUT.json [--seed N] [--lanes N] [--inner INNER.json] [--stats] [--session-inputs SHARE [--produced]] | TASKS OUT.json --dense WIDTH";
    let mut positional = Vec::new();
    let mut seed = None;
    let mut lanes = None;
    let mut inner = None;
    let mut stats = false;
    let mut dense = None;
    let mut session_inputs = 0.0;
    let mut produced = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seed" => seed = it.next().and_then(|v| v.parse::<u64>().ok()),
            "--lanes" => lanes = it.next().and_then(|v| v.parse::<usize>().ok()),
            "--inner" => inner = it.next().cloned(),
            "--stats" => stats = true,
            "--produced" => produced = true,
            "--session-inputs" => {
                match it.next().and_then(|v| v.parse::<f64>().ok()).filter(|s| (0.0..=1.0).contains(s)) {
                    Some(share) => session_inputs = share,
                    None => {
                        eprintln!("--session-inputs takes a share from 0 to 1\n{usage}");
                        return ExitCode::from(2);
                    }
                }
            }
            "--dense" => dense = it.next().and_then(|v| v.parse::<usize>().ok()),
            "-h" | "--help" => {
                println!("{usage}");
                return ExitCode::SUCCESS;
            }
            _ => positional.push(a.clone()),
        }
    }
    let (Some(tasks), Some(out)) = (positional.first().and_then(|t| t.parse::<usize>().ok()), positional.get(1)) else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    if let Some(width) = dense {
        return write(out, &dense_layers(tasks, width));
    }
    let mut config = Config::new(tasks);
    if let Some(s) = seed {
        config.seed = s;
    }
    config.lanes = lanes;
    config.session_inputs = session_inputs;
    config.session_inputs_produced = produced;
    let (root, st) = generate(&config);
    let written = write(out, &root);
    if written != ExitCode::SUCCESS {
        return written;
    }
    if let Some(path) = inner {
        let written = write(&path, &inner_blueprint());
        if written != ExitCode::SUCCESS {
            return written;
        }
    }
    if stats {
        println!("{}", st.to_json());
    }
    ExitCode::SUCCESS
}

fn write(path: &str, blueprint: &serde_json::Value) -> ExitCode {
    match std::fs::write(path, to_text(blueprint)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cannot write {path}: {e}");
            ExitCode::FAILURE
        }
    }
}
