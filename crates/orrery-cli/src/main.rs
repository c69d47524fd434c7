//! `orrery`: the command line for people and CI scripts. Each subcommand is a thin shell over
//! `orrery-blueprint`; exit codes are part of the interface: 0 all good, 1 a blueprint has an
//! error (or would change, or would be refused), 2 a file cannot be read or the arguments are
//! wrong.

/// A line on stdout for the commands that go on when their reader is gone (`run`, `job`,
/// `serve`, `mcp`: SIGPIPE is ignored for them, see `main`): a write that fails (the reader went
/// away, the terminal is gone after SIGHUP) is dropped, never a panic.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// The same on stderr.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

mod agent;
mod cli;
mod commands;
mod face;
mod interventions;
mod jobs;
mod lineage;
mod live;
mod logs;
mod mcp;
mod prompt;
mod remote;
mod run;
mod serve;
mod sessions;
mod signals;

// Loading a large blueprint makes millions of small allocations; mimalloc serves them about
// twice as fast as glibc's allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;
use cli::{Cli, Command, RemoteCommand, ServersCommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// The task store a command uses: `--db` (or `ORRERY_DB`, as the app), else the user's data directory.
fn db_path(db: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    use anyhow::Context;
    match db {
        Some(db) => Ok(db),
        None => orrery_api::default_db_path().context("this machine has no data directory: give --db PATH"),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    if !matches!(
        cli.command,
        Command::Run { .. }
            | Command::Resume { .. }
            | Command::Restart { .. }
            | Command::Recover { .. }
            | Command::Job { .. }
            | Command::Serve { .. }
            | Command::Mcp { .. }
    ) {
        // Like any Unix filter, end quietly when the reader of the output goes away
        // (`orrery sessions | head`). `run` and `resume` ignore it instead: they see their
        // session to its end (see run.rs); so does `serve`, which stops only on SIGINT/SIGTERM,
        // and `mcp`, which stops its sessions when its client goes away.
        // SAFETY: restoring a signal's default disposition before any thread is started.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    // The commands on files keep transparent huge pages (a large blueprint's model fills them);
    // the others host the engine or read the store, which allocate and free steadily: huge
    // pages cost them more to zero than they save (see orrery_api::without_huge_pages).
    if !matches!(
        cli.command,
        Command::Validate { .. } | Command::Fmt { .. } | Command::Export { .. } | Command::Graph { .. }
    ) {
        orrery_api::without_huge_pages();
    }
    // The log cap of this process's attempts.
    let log_cap = match &cli.command {
        Command::Run { driving, .. } | Command::Resume { driving, .. } | Command::Restart { driving, .. } => {
            driving.log_cap
        }
        Command::Recover { log_cap, .. } => *log_cap,
        _ => None,
    };
    if let Some(bytes) = log_cap {
        orrery_api::set_default_log_cap(bytes);
    }
    let outcome = match cli.command {
        Command::Validate { format, files } => commands::validate(format, &files),
        Command::Fmt { check, files } => commands::fmt(check, &files),
        Command::Export { to, output, files } => commands::export(to, output.as_deref(), &files),
        Command::Graph { format, file } => commands::graph(format, &file),
        Command::Sessions { db, format } => sessions::sessions(db, format),
        Command::Status { session, db, format } => sessions::status(&session, db, format),
        Command::Run { params, driving, simulate, alone, file } => {
            run::run(&file, &params, driving, simulate.simulation(), alone)
        }
        Command::Resume { session, driving } => run::go_on(&session, run::Stored::Resume, driving),
        Command::Recover { max_parallel, broker, db, format, .. } => run::recover(max_parallel, broker, db, format),
        Command::Broker { action, db, format } => agent::broker(action, db, format),
        Command::Agent { broker, id, types, work_dir, heartbeat } => {
            agent::agent(&broker, id, types, work_dir, heartbeat)
        }
        Command::Restart { session, saved, file, keep_done, from, driving } => {
            let how = orrery_api::Restart { file, saved, keep_done, from };
            run::go_on(&session, run::Stored::Restart(how), driving)
        }
        Command::Cancel { session, task, db, format } => interventions::cancel(&session, task.as_deref(), db, format),
        Command::Pause { session, db, format } => interventions::pause(&session, db, format),
        Command::Break { session, task, clear, db, format } => {
            interventions::set_breakpoint(&session, &task, clear, db, format)
        }
        Command::Continue { session, task, step, skip, db, format } => {
            let how = if step {
                "step"
            } else if skip {
                "skip"
            } else {
                "continue"
            };
            interventions::continue_session(&session, task.as_deref(), how, db, format)
        }
        Command::Answer { session, task, value, db, format } => {
            interventions::answer_prompt(&session, &task, &value, db, format)
        }
        Command::Jobs { format } => jobs::jobs(format),
        Command::Publish { server, token, force, db, format, files } => {
            remote::publish(&server, token, force, &files, db, format)
        }
        Command::Remote { action, server, token, db, format } => {
            let action = match action {
                RemoteCommand::Sessions => remote::RemoteAction::Sessions,
                RemoteCommand::Run { blueprint_id, params, name, timeout } => {
                    remote::RemoteAction::Run { blueprint_id, params, name, timeout }
                }
                RemoteCommand::Wait { session, timeout, start } => {
                    remote::RemoteAction::Wait { session, timeout, start }
                }
                RemoteCommand::Pause { session } => remote::RemoteAction::Control { session, action: "pause" },
                RemoteCommand::Stop { session } => remote::RemoteAction::Control { session, action: "stop" },
                RemoteCommand::Resume { session } => remote::RemoteAction::Control { session, action: "resume" },
                RemoteCommand::Restart { session } => remote::RemoteAction::Control { session, action: "restart" },
                RemoteCommand::Reset { session, task, alone, keep_outputs } => remote::RemoteAction::Intervene {
                    session,
                    action: "reset",
                    task,
                    downstream: !alone,
                    clear_outputs: !keep_outputs,
                },
                RemoteCommand::Skip { session, task } => remote::RemoteAction::Intervene {
                    session,
                    action: "skip",
                    task,
                    downstream: false,
                    clear_outputs: false,
                },
                RemoteCommand::ResetScope { session, scope } => remote::RemoteAction::Intervene {
                    session,
                    action: "reset_scope",
                    task: scope,
                    downstream: false,
                    clear_outputs: false,
                },
            };
            remote::remote(&server, token, action, db, format)
        }
        Command::Servers { action, db, format } => {
            let action = match action {
                None => remote::ServersAction::List,
                Some(ServersCommand::Add { name, url, token }) => remote::ServersAction::Add { name, url, token },
                Some(ServersCommand::Remove { name }) => remote::ServersAction::Remove { name },
            };
            remote::servers(action, db, format)
        }
        Command::Lineage { session, db, format } => lineage::lineage(&session, db, format),
        Command::Job { name, arguments, db, project, agent } => {
            jobs::job(&name, arguments.as_deref(), db, &project, agent.as_deref().unwrap_or("user"))
        }
        Command::Serve { port, token, max_parallel, no_recover, db } => {
            serve::serve(port, token, max_parallel, !no_recover, db)
        }
        Command::Mcp { max_parallel, db, project, agent } => mcp::mcp(max_parallel, db, project, agent),
        Command::Logs { session, task, attempt, follow, offset, limit, db, format } => {
            logs::logs(logs::LogsArgs { session, task, attempt, follow, offset, limit, db, format })
        }
        Command::Skip { session, task, db, format } => interventions::skip(&session, &task, db, format),
        Command::Reset { session, task, downstream, clear_outputs, db, format } => {
            interventions::reset(&session, &task, downstream, clear_outputs, db, format)
        }
        Command::ResetScope { session, scope_start, db, format } => {
            interventions::reset_scope(&session, &scope_start, db, format)
        }
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("orrery: {e:#}");
            ExitCode::from(2)
        }
    }
}
