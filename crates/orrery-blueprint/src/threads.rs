//! A second thread, when the system gives one. The work shared by two cores (reading a large
//! file, loading a long list of tasks, the rules, placing many diagnostics) is done on one when
//! no thread can be made (a limit on processes, no memory for a stack): never a panic.

use std::thread::{Scope, ScopedJoinHandle};

/// `work` on a new thread of `scope`, or `None` when none can be made (the caller then does it
/// itself).
pub(crate) fn spawn<'scope, T: Send + 'scope>(
    scope: &'scope Scope<'scope, '_>,
    work: impl FnOnce() -> T + Send + 'scope,
) -> Option<ScopedJoinHandle<'scope, T>> {
    #[cfg(test)]
    if REFUSED.get() {
        return None;
    }
    std::thread::Builder::new().spawn_scoped(scope, work).ok()
}

/// What `first` and `second` give, `second` made on a second thread meanwhile when the system
/// gives one, else after `first`.
pub(crate) fn join<A, B: Send>(first: impl FnOnce() -> A, second: impl Fn() -> B + Sync) -> (A, B) {
    std::thread::scope(|s| {
        let other = spawn(s, &second);
        let first = first();
        (first, other.map_or_else(&second, |o| o.join().expect("work shared by two cores does not panic")))
    })
}

#[cfg(test)]
thread_local! {
    /// Set by a test: no thread is made for the one that set it, as when the system refuses.
    static REFUSED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// What `work` gives when the system makes no thread for it.
#[cfg(test)]
pub(crate) fn refused<T>(work: impl FnOnce() -> T) -> T {
    REFUSED.set(true);
    let out = work();
    REFUSED.set(false);
    out
}
