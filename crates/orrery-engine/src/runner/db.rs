//! The store as the runner reaches it.

use super::*;

/// The store, reached from the blocking pool, and the observers of what it commits.
pub(super) struct Db {
    store: Arc<Mutex<Store>>,
    events: Option<broadcast::Sender<Event>>,
}

impl Db {
    pub(super) async fn open(store_path: &Path, options: &RunOptions) -> Result<Db, RunError> {
        let path = store_path.to_path_buf();
        let store = tokio::task::spawn_blocking(move || Store::open(&path))
            .await
            .map_err(|e| RunError::Join(e.to_string()))??;
        Ok(Db { store: Arc::new(Mutex::new(store)), events: options.events.clone() })
    }

    pub(super) async fn call<T: Send + 'static>(
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

    pub(super) fn announce(&self, events: impl IntoIterator<Item = Event>) {
        if let Some(sender) = &self.events {
            for event in events {
                // No receiver is not an error: nobody is watching.
                let _ = sender.send(event);
            }
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
}
