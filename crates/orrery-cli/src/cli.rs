//! The command line's grammar: the clap definitions of every command and its arguments, apart
//! from `main`'s dispatch so that the one can be read (and `--help` reviewed) without the other.

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::{Map, Value};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "orrery", version, about = "Design, check and run antikythera blueprints")]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Check blueprints; composites find their inner blueprints among the files given.
    Validate {
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Rewrite blueprints canonically, keeping each file's encoding.
    Fmt {
        /// Change nothing; list the files that would change and exit 1 if any would.
        #[arg(long)]
        check: bool,
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Write what an antikythera server accepts; refuse a blueprint it would refuse.
    Export {
        #[arg(long, value_enum)]
        to: ExportFormat,
        /// Output file (one input) or directory (several); standard output when absent.
        #[arg(short, long)]
        output: Option<PathBuf>,
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Run a blueprint to completion as a new session, stored in the task store.
    Run {
        /// A session parameter, `KEY=VALUE`; VALUE is read as JSON when it parses, else as text.
        #[arg(long = "param", value_name = "KEY=VALUE")]
        params: Vec<String>,
        #[command(flatten)]
        driving: Driving,
        #[command(flatten)]
        simulate: Simulate,
        #[command(flatten)]
        alone: AloneFlags,
        file: PathBuf,
    },
    /// Run a stopped, crashed or failed session on from where it ended, from the store alone.
    Resume {
        session: String,
        #[command(flatten)]
        driving: Driving,
    },
    /// Resume every session whose runner was interrupted (a crash, a power cut).
    Recover {
        /// How many processes may run at once (default: the number of cores).
        #[arg(long)]
        max_parallel: Option<usize>,
        #[command(flatten)]
        broker: BrokerArgs,
        /// The task store (default: `ORRERY_DB`, else the user's data directory).
        #[arg(long, env = "ORRERY_DB")]
        db: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
        /// At most this many bytes of output are kept in each attempt's log (as `run`).
        #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
        log_cap: Option<u64>,
    },
    /// Run a stored session over as a new session with its params: the same blueprint
    /// versions, or a blueprint file as saved now; from the start, keeping what it finished, or
    /// from one task.
    Restart {
        session: String,
        /// Run the file the session was started from, as it is saved now.
        #[arg(long, conflicts_with = "file")]
        saved: bool,
        /// Run this blueprint file (and the blueprints of its folder) instead.
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// Keep what the session finished, as far as the blueprint run now computes it the same
        /// way (an unchanged task whose dependencies are all kept): retry from failure as a new
        /// session.
        #[arg(long)]
        keep_done: bool,
        /// Run from this task (`{instance}.{task}`, or a task id): keep what the session
        /// finished, but not this task nor anything after it, which run again.
        #[arg(long, value_name = "TASK")]
        from: Option<String>,
        #[command(flatten)]
        driving: Driving,
    },
    /// Stop a running session (its runs are cancelled; it ends `stopped`), or, with TASK,
    /// cancel that task's running attempt (the task fails, and so does the session).
    Cancel {
        session: String,
        /// `{instance}.{task}`, or a task id.
        task: Option<String>,
        #[arg(long, env = "ORRERY_DB")]
        db: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Let go of a task a running session holds at a breakpoint (`--break`): it starts, or what
    /// follows it may. Without TASK, every held task.
    Continue {
        session: String,
        /// `{instance}.{task}`, or a task id.
        task: Option<String>,
        /// Run the task and hold again after it (held after: hold before each task that follows).
        #[arg(long, conflicts_with = "skip")]
        step: bool,
        /// Skip the task held before it starts.
        #[arg(long)]
        skip: bool,
        #[arg(long, env = "ORRERY_DB")]
        db: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Set a breakpoint of a running session from now on, `TASK` (before it starts) or
    /// `TASK:after` (after it ends); with `--clear`, clear the task's breakpoint.
    Break {
        session: String,
        /// `TASK`, `TASK:before` or `TASK:after` (`{instance}.{task}`, or a task id).
        task: String,
        /// Clear the task's breakpoint (a task held now stays held until `orrery continue`).
        #[arg(long)]
        clear: bool,
        #[arg(long, env = "ORRERY_DB")]
        db: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Pause a running session: nothing new starts, what runs finishes, then it is `stopped`.
    Pause {
        session: String,
        #[arg(long, env = "ORRERY_DB")]
        db: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Answer the prompt of a task of a running session; VALUE is JSON when it parses, else text.
    Answer {
        session: String,
        task: String,
        value: String,
        #[arg(long, env = "ORRERY_DB")]
        db: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// List the sessions in the task store, newest first.
    Sessions {
        #[arg(long, env = "ORRERY_DB")]
        db: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Show a session: its state, each task's state and attempts.
    Status {
        session: String,
        #[arg(long, env = "ORRERY_DB")]
        db: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Print the log of a task's attempt: whole, one byte window, or followed while it runs.
    Logs {
        session: String,
        /// `{instance}.{task}`, or a task id of the root blueprint.
        task: String,
        /// Which attempt (1, 2, ...); the latest when absent.
        #[arg(long)]
        attempt: Option<u32>,
        /// Print what is there, then what is appended until the attempt ends (or Ctrl-C).
        #[arg(long)]
        follow: bool,
        /// Read one window from this byte offset (-1: the tail).
        #[arg(long, allow_hyphen_values = true)]
        offset: Option<i64>,
        /// The window's size in bytes (clamped to 1024..262144; default 65536).
        #[arg(long)]
        limit: Option<u64>,
        #[arg(long, env = "ORRERY_DB")]
        db: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Skip a task of a session that is not running (it turns SKIPPED when it would start).
    Skip {
        session: String,
        /// `{instance}.{task}`, or a task id of the root blueprint.
        task: String,
        #[arg(long, env = "ORRERY_DB")]
        db: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Put a task of a session that is not running back to PENDING.
    Reset {
        session: String,
        /// `{instance}.{task}`, or a task id of the root blueprint.
        task: String,
        /// Also reset every task downstream of it.
        #[arg(long)]
        downstream: bool,
        /// Set the session data its outputs write (and its downstream's) to null.
        #[arg(long)]
        clear_outputs: bool,
        #[arg(long, env = "ORRERY_DB")]
        db: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Put a scope of a session that is not running back to its start: members PENDING, counters 0.
    ResetScope {
        session: String,
        /// The scope's start task.
        scope_start: String,
        #[arg(long, env = "ORRERY_DB")]
        db: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Which attempt's output fed which input, and the blueprint instances of a session.
    Lineage {
        session: String,
        #[arg(long, env = "ORRERY_DB")]
        db: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// List the jobs of Orrery's facade (what the app, the HTTP API and scripts call).
    Jobs {
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Call one job of the facade with JSON arguments; prints its envelope.
    Job {
        name: String,
        /// The arguments, a JSON object (none: `{}`).
        arguments: Option<String>,
        #[arg(long, env = "ORRERY_DB")]
        db: Option<PathBuf>,
        /// The project an agent's task memory is scoped to (create_task, record_event, ...).
        #[arg(long, env = "ORRERY_PROJECT", default_value = "default")]
        project: String,
        /// The agent recorded as the author of what the task memory jobs write (default: user).
        #[arg(long, env = "ORRERY_AGENT")]
        agent: Option<String>,
    },
    /// Serve the facade's jobs over HTTP on 127.0.0.1 until Ctrl-C (which stops the sessions it
    /// runs); prints the URL and the bearer token.
    Serve {
        /// The port (0: any free one; the printed URL tells which).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// The bearer token clients must send (at least 16 visible ASCII characters); generated
        /// when absent. On the command line it shows in `ps` to every user of the machine:
        /// prefer the environment variable ORRERY_TOKEN.
        #[arg(long, env = "ORRERY_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// How many processes a session it runs may run at once (default: the number of cores).
        #[arg(long)]
        max_parallel: Option<usize>,
        /// Leave the sessions a crash interrupted alone (by default they are resumed at start).
        #[arg(long)]
        no_recover: bool,
        /// The task store (default: `ORRERY_DB`, else the user's data directory).
        #[arg(long, env = "ORRERY_DB")]
        db: Option<PathBuf>,
    },
    /// Serve the facade's jobs as Model Context Protocol tools on standard input/output, for AI
    /// assistants (docs/agents.md); EOF or a signal ends it and stops the sessions it runs.
    Mcp {
        /// How many processes a session it runs may run at once (default: the number of cores).
        #[arg(long)]
        max_parallel: Option<usize>,
        /// The task store (default: `ORRERY_DB`, else the user's data directory).
        #[arg(long, env = "ORRERY_DB")]
        db: Option<PathBuf>,
        /// The project an agent's task memory is scoped to (create_task, record_event, ...).
        #[arg(long, env = "ORRERY_PROJECT", default_value = "default")]
        project: String,
        /// The agent recorded as the author of what the task memory jobs write (default: the name the MCP client gives).
        #[arg(long, env = "ORRERY_AGENT")]
        agent: Option<String>,
    },
    /// The MQTT broker whose antikythera agents run tasks (shared with the app): show it, set
    /// it, clear it, or check that it answers.
    Broker {
        #[command(subcommand)]
        action: Option<BrokerCommand>,
        #[arg(long, env = "ORRERY_DB", global = true)]
        db: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text, global = true)]
        format: ReportFormat,
    },
    /// Offer Orrery's built-in agents (shell.run, system.sleep, the display types, and
    /// system.start|end|composite) to the antikythera orchestrators on an MQTT broker, until
    /// interrupted.
    Agent {
        /// The broker: mqtt://HOST:PORT (default: `ORRERY_BROKER`).
        #[arg(long, env = "ORRERY_BROKER")]
        broker: String,
        /// The agent's id on the broker (default: orrery-HOST-PID).
        #[arg(long)]
        id: Option<String>,
        /// Offer only these types: names, or prefixes ending in `*`. Repeatable, or
        /// comma-separated.
        #[arg(long = "type", value_name = "TYPE", value_delimiter = ',')]
        types: Vec<String>,
        /// Where shell.run attempts keep their logs and files (default: a folder in the
        /// system's temporary directory).
        #[arg(long)]
        work_dir: Option<PathBuf>,
        /// Seconds between the heartbeats of a running task.
        #[arg(long, default_value_t = 2.0)]
        heartbeat: f64,
    },
    /// Upload blueprint files to an antikythera server, the inner blueprints they call first;
    /// nothing is sent when one has errors or would be refused.
    Publish {
        /// A saved server's name (`orrery servers add`) or an address (http://host:port).
        #[arg(long)]
        server: String,
        /// The server's token, for an address (a saved server has its own).
        #[arg(long, env = "ORRERY_SERVER_TOKEN")]
        token: Option<String>,
        /// Send them even when Orrery finds errors or predicts a refusal: the server decides.
        #[arg(long)]
        force: bool,
        #[arg(long, env = "ORRERY_DB")]
        db: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// The antikythera servers saved by name (shared with the app): list, add or remove.
    Servers {
        #[command(subcommand)]
        action: Option<ServersCommand>,
        #[arg(long, env = "ORRERY_DB", global = true)]
        db: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text, global = true)]
        format: ReportFormat,
    },
    /// Sessions on an antikythera server: list them, run a blueprint it holds and follow it to
    /// its end, pause, stop, resume or restart one.
    Remote {
        #[command(subcommand)]
        action: RemoteCommand,
        /// A saved server's name (`orrery servers add`) or an address (http://host:port).
        #[arg(long, global = true, default_value = "")]
        server: String,
        /// The server's token, for an address (a saved server has its own).
        #[arg(long, env = "ORRERY_SERVER_TOKEN", global = true)]
        token: Option<String>,
        #[arg(long, env = "ORRERY_DB", global = true)]
        db: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text, global = true)]
        format: ReportFormat,
    },
    /// Draw the DAG, scopes as clusters.
    Graph {
        #[arg(long, value_enum, default_value_t = GraphFormatArg::Dot)]
        format: GraphFormatArg,
        file: PathBuf,
    },
}

#[derive(Subcommand)]
pub(crate) enum RemoteCommand {
    /// The server's sessions.
    Sessions,
    /// Runs a blueprint the server holds and follows it to its end (exit 0 completed, 1 not).
    Run {
        blueprint_id: String,
        /// A session parameter (sent as text). Repeatable.
        #[arg(long = "param", value_name = "K=V")]
        params: Vec<String>,
        /// The session's id on the server.
        #[arg(long)]
        name: Option<String>,
        /// The longest to follow it, in seconds.
        #[arg(long, default_value_t = 600.0)]
        timeout: f64,
    },
    /// Follows a session to its end.
    Wait {
        session: String,
        #[arg(long, default_value_t = 600.0)]
        timeout: f64,
        /// Start (or resume) it once its stream is open.
        #[arg(long)]
        start: bool,
    },
    /// Pauses a session: the server starts no new task (resume goes on with it).
    Pause { session: String },
    /// Stops a session: it ends stopped on the server (resume or restart runs it again).
    Stop { session: String },
    /// Runs it again from where it stopped or failed.
    Resume { session: String },
    /// A new session of the same blueprint, started.
    Restart { session: String },
    /// A task of a session that is not running back to PENDING, with what runs after it.
    Reset {
        session: String,
        /// `blueprint_id.task_id`.
        task: String,
        /// Only this task, not what runs after it.
        #[arg(long)]
        alone: bool,
        #[arg(long)]
        keep_outputs: bool,
    },
    /// A task skipped when it would start (on a session that is not running).
    Skip {
        session: String,
        /// `blueprint_id.task_id`.
        task: String,
    },
    /// A scope's tasks back to PENDING (on a session that is not running).
    ResetScope { session: String, scope: String },
}

#[derive(Subcommand)]
pub(crate) enum ServersCommand {
    /// Saves a server (or new details for that name).
    Add {
        name: String,
        /// http://host:port
        url: String,
        #[arg(long)]
        token: Option<String>,
    },
    /// Forgets a saved server.
    Remove { name: String },
}

/// How `run`, `resume` and `restart` drive a session.
#[derive(Args)]
pub struct Driving {
    /// The answer to a prompt (`user_prompt.confirm`, `user_interaction.user_input`) of task
    /// TASK (its id, or its node key); VALUE is read as JSON when it parses, else as text.
    /// Repeatable. A prompt with no answer is asked on the terminal, or fails when stdin is
    /// not one.
    #[arg(long = "answer", value_name = "TASK=VALUE")]
    pub answers: Vec<String>,
    /// How many processes may run at once (default: the number of cores).
    #[arg(long)]
    pub max_parallel: Option<usize>,
    /// The task store (default: `ORRERY_DB`, else the user's data directory).
    #[arg(long, env = "ORRERY_DB")]
    pub db: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    #[command(flatten)]
    pub broker: BrokerArgs,
    /// At most this many bytes of output are kept in each attempt's log (default 1 GiB; a
    /// task's `log_cap_bytes` param wins); the rest is dropped, with a note in the log.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub log_cap: Option<u64>,
    /// Hold the session at TASK (its id, or its node key) before it starts, or with `:after`
    /// after it ended, until `orrery continue`. Repeatable.
    #[arg(long = "break", value_name = "TASK[:after]", value_parser = parse_breakpoint)]
    pub breakpoints: Vec<orrery_api::Breakpoint>,
    /// A task that fails holds the session there instead of failing it, until `orrery continue`
    /// (it fails then), `--step` (it runs again) or `--skip`.
    #[arg(long)]
    pub break_on_failure: bool,
}

/// How `run` runs one task alone ("test this task").
#[derive(Args)]
pub struct AloneFlags {
    /// Run only this TASK (its id, or its node key): the tasks it waits for count as done, the
    /// others as skipped. Its inputs read `--input`, then `--inputs-from`, then their declared
    /// values.
    #[arg(long, value_name = "TASK")]
    pub alone: Option<String>,
    /// A value of the task's input NAME, read as JSON when it parses, else as text. Repeatable.
    #[arg(long = "input", value_name = "NAME=VALUE", requires = "alone")]
    pub inputs: Vec<String>,
    /// Its other inputs read the data of this past SESSION of the blueprint; `latest`: the
    /// newest session of the blueprint that completed.
    #[arg(long, value_name = "SESSION", requires = "alone")]
    pub inputs_from: Option<String>,
}

/// How `run` simulates a session: no process starts.
#[derive(Args)]
pub struct Simulate {
    /// Run without processes: each task that would start a process, ask a person or reach an
    /// agent succeeds at once, its outputs from `--output`, then `--outputs-from`, then its
    /// declared defaults. Conditions, scopes, loops, composites and fan-out run for real.
    #[arg(long)]
    pub simulate: bool,
    /// The outputs of a simulated TASK (its id, or its node key), a JSON object:
    /// `--output fetch='{"count": 3}'`. Repeatable.
    #[arg(long = "output", value_name = "TASK=OBJECT", requires = "simulate", value_parser = parse_outputs)]
    pub outputs: Vec<(String, Map<String, Value>)>,
    /// A simulated TASK fails; with `:N`, only its first N attempts (a retry from failure then
    /// succeeds).
    /// Repeatable.
    #[arg(long = "fail", value_name = "TASK[:N]", requires = "simulate", value_parser = parse_failure)]
    pub fail: Vec<orrery_api::SimulatedFailure>,
    /// The tasks take their outputs of this past SESSION (the n-th time a task succeeds, its
    /// n-th time there).
    #[arg(long, value_name = "SESSION", requires = "simulate")]
    pub outputs_from: Option<String>,
    /// Each task takes as long as it took in `--outputs-from` (without: at once).
    #[arg(long, requires = "outputs_from")]
    pub durations: bool,
}

impl Simulate {
    /// The simulation asked for; `None` without `--simulate`.
    pub fn simulation(self) -> Option<orrery_api::Simulation> {
        self.simulate.then(|| orrery_api::Simulation {
            outputs: self.outputs.into_iter().collect(),
            fail: self.fail,
            outputs_from: self.outputs_from,
            durations: self.durations,
        })
    }
}

/// `TASK={...}`: a task's simulated outputs.
fn parse_outputs(text: &str) -> Result<(String, Map<String, Value>), String> {
    let Some((task, object)) = text.split_once('=').filter(|(task, _)| !task.is_empty()) else {
        return Err(format!("{text:?} is not TASK=OBJECT"));
    };
    match serde_json::from_str::<Value>(object) {
        Ok(Value::Object(outputs)) => Ok((task.to_string(), outputs)),
        _ => Err(format!("the outputs of {task:?} are not a JSON object: {object}")),
    }
}

/// `TASK` or `TASK:N` (N at least 1).
fn parse_failure(text: &str) -> Result<orrery_api::SimulatedFailure, String> {
    let (task, attempts) = match text.rsplit_once(':') {
        Some((task, n)) if n.chars().all(|c| c.is_ascii_digit()) => match n.parse::<std::num::NonZeroU32>() {
            Ok(n) => (task, Some(n)),
            Err(_) => return Err(format!("{text:?}: N is how many attempts fail, at least 1")),
        },
        _ => (text, None),
    };
    if task.is_empty() {
        return Err(format!("{text:?} names no task (TASK or TASK:N)"));
    }
    Ok(orrery_api::SimulatedFailure { task: task.to_string(), attempts })
}

/// `TASK`, `TASK:before` or `TASK:after`.
fn parse_breakpoint(text: &str) -> Result<orrery_api::Breakpoint, String> {
    let (task, at) = match text.rsplit_once(':') {
        Some((task, at)) if orrery_api::BreakAt::parse(at).is_some() => (task, orrery_api::BreakAt::parse(at)),
        _ => (text, Some(orrery_api::BreakAt::Before)),
    };
    match (task.is_empty(), at) {
        (false, Some(at)) => Ok(orrery_api::Breakpoint { task: task.to_string(), at }),
        _ => Err(format!("{text:?} names no task (TASK, TASK:before or TASK:after)")),
    }
}

/// Antikythera agents on an MQTT broker, for the task types Orrery has no agent for. Each
/// defaults to the settings saved with `orrery broker set` (shared with the app).
#[derive(Args, Clone, Default)]
pub struct BrokerArgs {
    /// An MQTT broker (mqtt://HOST:PORT) whose antikythera agents run the task types Orrery has
    /// no agent for, and those of --via-broker (default: `ORRERY_BROKER`, else the saved
    /// broker; none: built-in agents only).
    #[arg(long, env = "ORRERY_BROKER")]
    pub broker: Option<String>,
    #[command(flatten)]
    pub policy: BrokerPolicyArgs,
}

/// How tasks go to the broker's agents.
#[derive(Args, Clone, Default)]
pub struct BrokerPolicyArgs {
    /// Task types sent to the broker's agents although Orrery runs them itself: a name, or a
    /// prefix ending in `*` (`system.sleep`, `user_interaction.*`, `*`). Repeatable, or
    /// comma-separated. `system.start|end|composite` always run in Orrery.
    #[arg(long = "via-broker", value_name = "TYPE", value_delimiter = ',')]
    pub via_broker: Vec<String>,
    /// Seconds an agent that claimed a task may stay silent (no completion; Orrery's agents send
    /// a heartbeat) before the task is published again (--agent-retries) or fails with
    /// AGENT_TIMEOUT. Default: no limit. A task's param `agent_timeout_s` wins.
    #[arg(long, value_name = "SECONDS")]
    pub agent_timeout: Option<f64>,
    /// How many times a task whose agent went silent is published again (default 0; a task's
    /// param `agent_retries` wins).
    #[arg(long)]
    pub agent_retries: Option<u32>,
    /// Seconds before an unclaimed task is first published again (default 2); the wait doubles
    /// up to 90 s, 5 times, then the task fails with NO_AGENT_CLAIMED.
    #[arg(long, value_name = "SECONDS")]
    pub claim_wait: Option<f64>,
}

#[derive(Subcommand)]
pub enum BrokerCommand {
    /// Saves the broker and how tasks go to it (the flags not given keep their saved value).
    Set {
        /// mqtt://HOST:PORT
        broker: String,
        #[command(flatten)]
        policy: BrokerPolicyArgs,
    },
    /// Forgets the broker: sessions use built-in agents only.
    Clear,
    /// Connects to the saved broker (or BROKER) and says whether it answered (exit 0, else 2).
    Check { broker: Option<String> },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ReportFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Antikythera,
    Compas,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum GraphFormatArg {
    Dot,
    Mermaid,
}

#[cfg(test)]
mod tests {
    /// clap checks a command's arguments only when that command is parsed: every one, here.
    #[test]
    fn every_command_is_well_formed() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }

    /// Its one line is the command's `--help` and its manual page's NAME (a page without one
    /// is not found by `apropos`, and lintian says so).
    #[test]
    fn every_command_says_what_it_does() {
        use clap::CommandFactory;
        fn unsaid(command: &clap::Command, path: &str, out: &mut Vec<String>) {
            for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
                let path = format!("{path} {}", sub.get_name());
                if sub.get_about().is_none() {
                    out.push(path.clone());
                }
                unsaid(sub, &path, out);
            }
        }
        let mut missing = Vec::new();
        unsaid(&super::Cli::command(), "orrery", &mut missing);
        assert!(missing.is_empty(), "commands without a description: {missing:?}");
    }
}
