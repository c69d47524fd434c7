//! The store as the runner reaches it: group commit of transitions, announced once committed.

use super::*;

/// The store, reached from the blocking pool, and the observers of what it commits.
///
/// Writes land in a batch ([`Store::begin_batch`]) that stays open until [`Db::flush`]: the
/// runner flushes once a round's processes are started, before it waits for an agent and when
/// the session ends, so every transition of one round of decisions (a task settled, the next
/// ones begun) costs one commit, one fsync. Events wait in `pending` until their batch committed:
/// nothing is announced that a crash could undo.
pub(super) struct Db {
    /// This runner's lease (see [`Db::take_lease`]).
    pub(super) lease: Lease,
    store: Arc<Mutex<Store>>,
    events: Option<broadcast::Sender<Arc<Event>>>,
    pending: Mutex<Vec<Event>>,
    /// Writes that wait for the next batch ([`Db::call_or_defer`]).
    deferred: Arc<Mutex<Vec<Deferred>>>,
}

/// How long writes may wait for a batch before the runner commits them on their own.
pub(super) const DEFERRED_WRITES_WAIT: Duration = Duration::from_millis(50);

type Deferred = Box<dyn FnOnce(&mut Store) -> Result<(), StoreError> + Send>;

/// In a batch of the level wanted: the writes that waited for one first, then `f`.
fn begun<T>(
    store: &mut Store,
    deferred: &Mutex<Vec<Deferred>>,
    f: impl FnOnce(&mut Store) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    for write in std::mem::take(&mut *deferred.lock().unwrap_or_else(|poisoned| poisoned.into_inner())) {
        write(store)?;
    }
    f(store)
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
            store: Arc::new(Mutex::new(store)),
            events: options.events.clone(),
            pending: Mutex::new(Vec::new()),
            deferred: Arc::new(Mutex::new(Vec::new())),
        })
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

    async fn on_store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, RunError> {
        let store = Arc::clone(&self.store);
        let result = tokio::task::spawn_blocking(move || {
            let mut guard = store.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            f(&mut guard)
        })
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
    /// ([`Store::try_begin_batch`]); else on the blocking pool, as it may wait for another
    /// writer (the busy timeout) or for the commit of a batch of a lower level.
    async fn in_batch<T: Send + 'static>(
        &self,
        level: Synchronous,
        f: impl FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, RunError> {
        {
            let mut store = self.store.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if store.try_begin_batch(level)? {
                return Ok(begun(&mut store, &self.deferred, f)?);
            }
        }
        let deferred = Arc::clone(&self.deferred);
        self.on_store(move |s| {
            s.begin_batch(level)?;
            begun(s, &deferred, f)
        })
        .await
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
        let mut store = self.store.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if store.in_batch() {
            return Ok(f(&mut store)?);
        }
        self.deferred.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(Box::new(f));
        Ok(())
    }

    /// Whether writes wait for the next batch.
    pub(super) fn has_deferred(&self) -> bool {
        !self.deferred.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).is_empty()
    }

    /// Commits the writes that wait, in a batch of their own (no fsync).
    pub(super) async fn write_deferred(&self) -> Result<(), RunError> {
        self.call_relaxed(|_| Ok(())).await?;
        self.flush().await
    }

    /// A read: in the open batch if there is one (it sees the batch's writes), else on the
    /// blocking pool without taking the write lock.
    pub(super) async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, RunError> {
        {
            let mut store = self.store.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if store.in_batch() {
                return Ok(f(&mut store)?);
            }
        }
        self.on_store(f).await
    }

    /// Events to announce once the open batch is committed.
    pub(super) fn announce(&self, events: impl IntoIterator<Item = Event>) {
        if self.events.is_some() {
            self.pending.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).extend(events);
        }
    }

    /// A store call whose events are announced once committed.
    pub(super) async fn write(
        &self,
        f: impl FnOnce(&mut Store) -> Result<Vec<Event>, StoreError> + Send + 'static,
    ) -> Result<(), RunError> {
        let events = self.call(f).await?;
        self.announce(events);
        Ok(())
    }

    /// Rolls the open batch back and forgets its events (after an error).
    pub(super) async fn abandon(&self) {
        let _ = self
            .on_store(|s| {
                s.rollback_batch();
                Ok(())
            })
            .await;
        self.pending.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clear();
    }

    /// Commits the open batch, then announces its events in commit order.
    pub(super) async fn flush(&self) -> Result<(), RunError> {
        self.on_store(Store::commit_batch).await?;
        let events = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        if let Some(sender) = &self.events {
            for event in events {
                // No receiver is not an error: nobody is watching.
                let _ = sender.send(Arc::new(event));
            }
        }
        Ok(())
    }
}
