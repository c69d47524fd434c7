//! The store as the runner reaches it: group commit of transitions, announced once committed.

use std::sync::{Condvar, MutexGuard, TryLockError};
use std::time::Instant;

use orrery_store::{Clock, IdSource};

use super::*;

/// The store, reached from the blocking pool, and the observers of what it commits.
///
/// Writes land in a batch ([`Store::begin_batch`]) that stays open until a commit: the runner
/// commits once a round's processes are started ([`Db::commit_behind`]), before it waits for
/// an agent and when the session ends ([`Db::flush`]), so every transition of one round of
/// decisions (a task settled, the next ones begun) costs one commit, one fsync. Events wait in
/// `pending` until their batch committed: nothing is announced that a crash could undo.
///
/// The round's commit runs behind the runner: the next round does not wait for it unless it
/// reads the store. The common round (a task settled, the next begun, its process started)
/// writes behind ([`Db::behind`]), so a task's end reaches the next process's start without
/// waiting for the last round's fsync. Commits behind the runner are [`COMMIT_GAP`] apart at
/// least: the rounds of short tasks share one.
pub(super) struct Db {
    /// This runner's lease (see [`Db::take_lease`]).
    pub(super) lease: Lease,
    ids: Arc<dyn IdSource>,
    /// The store's clock: a write queued for a later batch is made at the time it was queued.
    clock: Arc<dyn Clock>,
    shared: Arc<Shared>,
}

struct Shared {
    store: Mutex<Store>,
    events: Option<broadcast::Sender<Arc<Event>>>,
    /// The events of what the open batch holds, announced once it is committed.
    pending: Mutex<Vec<Event>>,
    queue: Mutex<Queue>,
    /// Told when the sealed round is taken: a commit behind that waits for its gap need not.
    taken: Condvar,
}

#[derive(Default)]
struct Queue {
    /// Writes that wait for the next batch, in order, before its own.
    writes: Vec<Deferred>,
    /// Some of `writes` are transitions, for the next commit ([`Db::behind`]); the others
    /// ([`Db::call_or_defer`]) may wait longer.
    due: bool,
    /// A commit runs behind the runner.
    committing: bool,
    /// A round is over ([`Db::commit_behind`]) and waits for its commit: the writes it had
    /// queued, and the open batch. It is committed before anything else touches the store: no
    /// later call joins its batch, and no write of the next round is committed with it (a
    /// commit behind the runner would otherwise announce half of the next round's decision).
    sealed: Option<Vec<Deferred>>,
    /// What a commit behind the runner failed with: its writes did not land, and the runner's
    /// next call to the store answers this error (its poll of requests reads the store every
    /// [`super::REQUEST_POLL`], so a runner waiting for a long task learns it then).
    failed: Option<StoreError>,
    /// When the last commit behind the runner began.
    last_commit: Option<Instant>,
}

/// The least time between the starts of two commits behind the runner. A round sealed sooner
/// waits for the rest of it, and the rounds sealed meanwhile are committed with it: at
/// parallelism 2, tasks of `true` end every 0.6 ms, and a commit each (about 20 pages written
/// and an fsync) took a tenth of the run's CPU, on the two cores the tasks needed. A round after
/// a quiet spell is committed at once; its events are announced when committed, as ever.
const COMMIT_GAP: Duration = Duration::from_millis(10);

/// How long writes may wait for a batch before the runner commits them on their own.
pub(super) const DEFERRED_WRITES_WAIT: Duration = Duration::from_millis(50);

type Deferred = Box<dyn FnOnce(&mut Store) -> Result<Vec<Event>, StoreError> + Send>;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The store when no commit holds it.
fn try_lock<T>(mutex: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match mutex.try_lock() {
        Ok(guard) => Some(guard),
        Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

impl Shared {
    /// In a batch of the level wanted: the writes that waited for one first, then `f`.
    fn begun<T>(
        &self,
        store: &mut Store,
        f: impl FnOnce(&mut Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let queued = {
            let mut queue = lock(&self.queue);
            queue.due = false;
            std::mem::take(&mut queue.writes)
        };
        self.apply(store, queued)?;
        f(store)
    }

    /// Writes `writes` in order, their events to be announced with the batch.
    fn apply(&self, store: &mut Store, writes: Vec<Deferred>) -> Result<(), StoreError> {
        for write in writes {
            let events = write(store)?;
            self.announce(events);
        }
        Ok(())
    }

    /// Commits the sealed round, if one waits (its queued writes, then the open batch), and
    /// announces its events in commit order. A commit that fails rolls its batch back and
    /// forgets its events.
    fn commit_sealed(&self, store: &mut Store) -> Result<(), StoreError> {
        let Some(writes) = lock(&self.queue).sealed.take() else { return Ok(()) };
        self.taken.notify_all();
        let committed = if writes.is_empty() {
            Ok(())
        } else {
            store.begin_batch(Synchronous::Full).and_then(|()| self.apply(store, writes))
        };
        self.end_batch(store, committed)
    }

    /// Commits the open batch after `written`, and announces its events; else rolls it back.
    fn end_batch(&self, store: &mut Store, written: Result<(), StoreError>) -> Result<(), StoreError> {
        let committed = written.and_then(|()| store.commit_batch());
        let events = std::mem::take(&mut *lock(&self.pending));
        if committed.is_err() {
            store.rollback_batch();
            return committed;
        }
        if let Some(sender) = &self.events {
            for event in events {
                // No receiver is not an error: nobody is watching.
                let _ = sender.send(Arc::new(event));
            }
        }
        Ok(())
    }

    fn announce(&self, events: impl IntoIterator<Item = Event>) {
        if self.events.is_some() {
            lock(&self.pending).extend(events);
        }
    }

    /// Whether a call may run in the open batch as it is: one is open, and it is full when
    /// transitions wait to go first (they need an fsync at their commit).
    fn open_for(&self, store: &Store) -> bool {
        store.batch_level() == Some(Synchronous::Full) || (store.in_batch() && !lock(&self.queue).due)
    }

    /// The store for a call in place: free, and no round waiting for its commit.
    fn free(&self) -> Option<MutexGuard<'_, Store>> {
        try_lock(&self.store).filter(|_| lock(&self.queue).sealed.is_none())
    }

    /// The error a commit behind the runner failed with, once.
    fn failed(&self) -> Result<(), StoreError> {
        lock(&self.queue).failed.take().map_or(Ok(()), Err)
    }
}

impl Db {
    pub(super) async fn open(store_path: &Path, options: &RunOptions) -> Result<Db, RunError> {
        let path = store_path.to_path_buf();
        let store = tokio::task::spawn_blocking(move || Store::open(&path))
            .await
            .map_err(|e| RunError::Join(e.to_string()))??;
        let (pid, start_time) = crate::process::current_process().map_err(|e| RunError::Identity(e.to_string()))?;
        static RUNNERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = RUNNERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let lease = Lease { token: format!("{pid}-{start_time}-{n}"), process: ProcessIdentity { pid, start_time } };
        Ok(Db {
            lease,
            ids: store.id_source(),
            clock: store.clock(),
            shared: Arc::new(Shared {
                store: Mutex::new(store),
                events: options.events.clone(),
                pending: Mutex::new(Vec::new()),
                queue: Mutex::new(Queue::default()),
                taken: Condvar::new(),
            }),
        })
    }

    /// A new attempt's run id, from the store's source of ids ([`Store::begin_attempt_as`]).
    pub(super) fn new_run_id(&self) -> RunId {
        RunId::from(self.ids.run_id())
    }

    /// Takes the session's lease for this runner: refused ([`StoreError::Leased`]) while
    /// another runner whose process lives holds it. A runner in this same process counts as
    /// alive: two runners never drive one session.
    pub(super) async fn take_lease(&self, session_id: &str) -> Result<(), RunError> {
        let (session, lease) = (session_id.to_string(), self.lease.clone());
        self.call(move |s| {
            s.acquire_lease(&session, &lease, |holder| is_alive(holder.pid, holder.start_time))?;
            Ok(())
        })
        .await?;
        // Taken before anything else is done to the session.
        self.flush().await
    }

    /// Lets go of the session's lease (committed at once).
    pub(super) async fn release_lease(&self, session_id: &str) -> Result<(), RunError> {
        let (session, token) = (session_id.to_string(), self.lease.token.clone());
        self.call(move |s| s.release_lease(&session, &token)).await?;
        self.flush().await
    }

    /// `f` on the blocking pool, once the store is free (a commit behind the runner may hold
    /// it), a commit behind that failed has been answered and the sealed round is committed.
    async fn on_store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Shared, &mut Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, RunError> {
        self.blocking(move |shared, s| {
            shared.failed()?;
            shared.commit_sealed(s)?;
            f(shared, s)
        })
        .await
    }

    /// `f` on the blocking pool, once the store is free.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Shared, &mut Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, RunError> {
        let shared = Arc::clone(&self.shared);
        let result = tokio::task::spawn_blocking(move || f(&shared, &mut lock(&shared.store)))
            .await
            .map_err(|e| RunError::Join(e.to_string()))?;
        Ok(result?)
    }

    /// A store call in the open batch, whose commit will survive a power cut.
    pub(super) async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, RunError> {
        self.in_batch(Synchronous::Full, f).await
    }

    /// A store call for what need only survive a killed process, not a power cut: the process
    /// of an attempt (a power cut kills it too) and progress (advisory). It joins an open batch,
    /// or opens one that commits without an fsync.
    pub(super) async fn call_relaxed<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, RunError> {
        self.in_batch(Synchronous::Normal, f).await
    }

    /// Runs `f` in a batch of at least `level`. Inside a batch of that level, a call touches no
    /// disk until the commit (SQLite keeps the pages of an open transaction in memory, the
    /// file's own pages are in the OS cache), so it runs right here: a thread hop per call cost
    /// more than the call itself. A batch is begun here too when that need not wait
    /// ([`Store::try_begin_batch`]); else on the blocking pool, as it may wait for a commit
    /// behind the runner, another writer (the busy timeout) or the commit of a batch of a lower
    /// level.
    async fn in_batch<T: Send + 'static>(
        &self,
        level: Synchronous,
        f: impl FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, RunError> {
        // The transitions that wait go first, and need a full commit.
        let level = if lock(&self.shared.queue).due { Synchronous::Full } else { level };
        if let Some(mut store) = self.shared.free() {
            self.shared.failed()?;
            if store.try_begin_batch(level)? {
                return Ok(self.shared.begun(&mut store, f)?);
            }
        }
        self.on_store(move |shared, s| {
            s.begin_batch(level)?;
            shared.begun(s, f)
        })
        .await
    }

    /// A write the runner does not wait for: queued for the next batch, which the next
    /// [`Db::commit_behind`] at the latest writes and commits on the blocking pool (or a call
    /// before it, in place); its events are announced once committed. For the transitions of
    /// the common round (a task settled, the next begun), which need nothing back from the
    /// store: the round's process starts without waiting for SQLite. A queued write that fails
    /// fails the runner's next call to the store.
    pub(super) fn behind(
        &self,
        f: impl FnOnce(&mut Store) -> Result<Vec<Event>, StoreError> + Send + 'static,
    ) -> Result<(), RunError> {
        let mut queue = lock(&self.shared.queue);
        if let Some(e) = queue.failed.take() {
            return Err(e.into());
        }
        let at = self.clock.now_ms();
        queue.writes.push(Box::new(move |s: &mut Store| s.as_of(at, f)));
        queue.due = true;
        Ok(())
    }

    /// A write that need not be committed before the next transition is: it joins the open
    /// batch, or waits for the next one, so it costs no commit of its own while tasks are short;
    /// the runner commits what waits once it has been idle for [`DEFERRED_WRITES_WAIT`]. For the
    /// process of an attempt: recovery finds a process its runner did not record by the
    /// attempt's `ORRERY_RUN_ID`, so the record only spares that search (and shows the pid
    /// early). Writes wait in order, before the next batch's own.
    pub(super) fn call_or_defer(
        &self,
        f: impl FnOnce(&mut Store) -> Result<(), StoreError> + Send + 'static,
    ) -> Result<(), RunError> {
        if let Some(mut store) = self.shared.free() {
            if self.shared.open_for(&store) {
                self.shared.failed()?;
                return Ok(self.shared.begun(&mut store, f)?);
            }
        }
        let at = self.clock.now_ms();
        lock(&self.shared.queue).writes.push(Box::new(move |s: &mut Store| s.as_of(at, f).map(|()| Vec::new())));
        Ok(())
    }

    /// Whether writes wait for the next batch.
    pub(super) fn has_deferred(&self) -> bool {
        !lock(&self.shared.queue).writes.is_empty()
    }

    /// Commits the writes that wait, in a batch of their own (no fsync).
    pub(super) async fn write_deferred(&self) -> Result<(), RunError> {
        self.call_relaxed(|_| Ok(())).await?;
        self.flush().await
    }

    /// A read: in the open batch if there is one (it sees the batch's writes), else on the
    /// blocking pool without taking the write lock, once what waits is written.
    pub(super) async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, RunError> {
        if let Some(mut store) = self.shared.free() {
            if self.shared.open_for(&store) {
                self.shared.failed()?;
                return Ok(self.shared.begun(&mut store, f)?);
            }
        }
        self.on_store(move |shared, s| {
            if lock(&shared.queue).writes.is_empty() {
                f(s)
            } else {
                s.begin_batch(Synchronous::Full)?;
                shared.begun(s, f)
            }
        })
        .await
    }

    /// Events to announce once the open batch is committed.
    pub(super) fn announce(&self, events: impl IntoIterator<Item = Event>) {
        self.shared.announce(events);
    }

    /// A store call whose events are announced once committed.
    pub(super) async fn write(
        &self,
        f: impl FnOnce(&mut Store) -> Result<Vec<Event>, StoreError> + Send + 'static,
    ) -> Result<(), RunError> {
        let shared = Arc::clone(&self.shared);
        // Announced while the store is held: a commit behind the runner takes them with it.
        self.call(move |s| {
            let events = f(s)?;
            shared.announce(events);
            Ok(())
        })
        .await
    }

    /// Rolls the open batch back and forgets its events and the writes that wait (after an
    /// error).
    pub(super) async fn abandon(&self) {
        let _ = self
            .blocking(|shared, s| {
                // A whole round: committed as a later call would (its failure is the runner's
                // already). What follows is cleared whatever became of it.
                let _ = shared.commit_sealed(s);
                s.rollback_batch();
                lock(&shared.pending).clear();
                let mut queue = lock(&shared.queue);
                queue.writes.clear();
                queue.sealed = None;
                queue.failed = None;
                Ok(())
            })
            .await;
    }

    /// Commits the open batch and the writes that wait, then announces their events in
    /// commit order; returns once committed.
    pub(super) async fn flush(&self) -> Result<(), RunError> {
        // The sealed round first (`on_store`), then what was queued since and the open batch.
        self.on_store(|shared, s| {
            let written = if lock(&shared.queue).writes.is_empty() {
                Ok(())
            } else {
                s.begin_batch(Synchronous::Full).and_then(|()| shared.begun(s, |_| Ok(())))
            };
            shared.end_batch(s, written)
        })
        .await
    }

    /// Ends the round: seals it ([`Queue::sealed`]) and commits it on the blocking pool
    /// without waiting: the runner goes on meanwhile. One commit runs at a time, [`COMMIT_GAP`]
    /// after the last one began at the earliest; the rounds sealed until then go with it.
    pub(super) fn commit_behind(&self) {
        {
            let mut queue = lock(&self.shared.queue);
            let writes = std::mem::take(&mut queue.writes);
            queue.due = false;
            queue.sealed.get_or_insert_with(Vec::new).extend(writes);
            if queue.committing {
                return;
            }
            queue.committing = true;
        }
        let shared = Arc::clone(&self.shared);
        tokio::task::spawn_blocking(move || loop {
            {
                // Until the gap is over, or another call took the round (the session's end
                // flushes it): the runtime waits for this thread before it shuts down.
                let queue = lock(&shared.queue);
                let rest =
                    queue.last_commit.and_then(|last| (last + COMMIT_GAP).checked_duration_since(Instant::now()));
                if let Some(rest) = rest {
                    let _ = shared.taken.wait_timeout_while(queue, rest, |queue| queue.sealed.is_some());
                }
            }
            let mut store = lock(&shared.store);
            {
                let mut queue = lock(&shared.queue);
                if queue.sealed.is_none() {
                    queue.committing = false;
                    return;
                }
                queue.last_commit = Some(Instant::now());
            }
            if let Err(e) = shared.commit_sealed(&mut store) {
                let mut queue = lock(&shared.queue);
                queue.failed.get_or_insert(e);
                queue.committing = false;
                return;
            }
        });
    }
}
