//! The signals that end a long-running command: SIGINT (Ctrl-C), SIGTERM (`kill`, a service
//! manager's stop) and SIGHUP (the terminal closed). Each command that runs something
//! (`run`, `resume`, `restart`, `recover`, `serve`, `agent`, `logs --follow`) treats the three
//! alike: as Ctrl-C was always treated, it stops what it runs cleanly and exits with the code it
//! gives for Ctrl-C. Left to their default disposition, SIGTERM and SIGHUP would kill the runner
//! at once and leave its tasks running with nobody to settle them.
//!
//! They are watched once per process ([`watch`]), on a thread of their own with its own small
//! runtime, from the first call on: the watch outlives the runtimes of the commands, so that
//! `orrery recover`, which drives one session after another (a runtime each), never has a
//! moment where a signal is caught and nobody acts on it. A signal is counted; every [`Stops`]
//! sees each one after its creation, and one that came before it too (a stop asked while no
//! session ran is not forgotten).

use anyhow::{anyhow, Result};
use std::sync::OnceLock;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

/// How many stop signals came so far, and the name of the last one.
type Count = (u64, &'static str);

static WATCH: OnceLock<Result<watch::Receiver<Count>, String>> = OnceLock::new();

/// The stop signals of this process, from now on and since the first call (which installs the
/// handlers: until then SIGTERM and SIGHUP keep their default disposition).
pub fn watch() -> Result<Stops> {
    let receiver = WATCH.get_or_init(start).as_ref().map_err(|e| anyhow!("cannot watch the stop signals: {e}"))?;
    Ok(Stops { receiver: receiver.clone(), seen: 0 })
}

/// Whether a stop signal came (only known once [`watch`] was called).
pub fn received() -> bool {
    matches!(WATCH.get(), Some(Ok(receiver)) if receiver.borrow().0 > 0)
}

/// A view of the stop signals.
pub struct Stops {
    receiver: watch::Receiver<Count>,
    seen: u64,
}

impl Stops {
    /// The next stop signal (its name, `SIGTERM` say) not seen yet by this view; one that came
    /// before the view was made is answered at once. `None` only if the watch ended.
    pub async fn next(&mut self) -> Option<&'static str> {
        loop {
            let (count, name) = *self.receiver.borrow_and_update();
            if count > self.seen {
                self.seen = count;
                return Some(name);
            }
            self.receiver.changed().await.ok()?;
        }
    }
}

fn start() -> Result<watch::Receiver<Count>, String> {
    let (sender, receiver) = watch::channel((0, ""));
    let (ready, registered) = std::sync::mpsc::channel::<Result<(), String>>();
    std::thread::Builder::new()
        .name("orrery-signals".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_io().build() {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = ready.send(Err(e.to_string()));
                    return;
                }
            };
            runtime.block_on(async move {
                let handlers = (|| {
                    Ok::<_, std::io::Error>((
                        signal(SignalKind::interrupt())?,
                        signal(SignalKind::terminate())?,
                        signal(SignalKind::hangup())?,
                    ))
                })();
                let (mut interrupt, mut terminate, mut hangup) = match handlers {
                    Ok(handlers) => handlers,
                    Err(e) => {
                        let _ = ready.send(Err(e.to_string()));
                        return;
                    }
                };
                let _ = ready.send(Ok(()));
                let mut count = 0;
                loop {
                    let name = tokio::select! {
                        _ = interrupt.recv() => "SIGINT",
                        _ = terminate.recv() => "SIGTERM",
                        _ = hangup.recv() => "SIGHUP",
                    };
                    count += 1;
                    sender.send_replace((count, name));
                }
            });
        })
        .map_err(|e| e.to_string())?;
    registered.recv().map_err(|_| "the signal thread ended".to_string())??;
    Ok(receiver)
}

/// The next stop signal, for a command that simply ends on one (`agent`, `logs --follow`);
/// one that came already is answered at once. Falls back to Ctrl-C alone if the signals cannot
/// be watched.
pub async fn stop() -> &'static str {
    match watch() {
        Ok(mut stops) => match stops.next().await {
            Some(name) => name,
            None => std::future::pending().await,
        },
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}
