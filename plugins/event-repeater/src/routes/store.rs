//! The route store: the canonical routes, their compiled table in force,
//! the `--max-routes` limit and the state file, behind one type. A change
//! is a transaction: compute the new set, check the limit, write the file,
//! swap the table; nothing changes when a step fails ([`RouteError`] says
//! which). The API's handlers only translate requests to these calls and
//! the errors to HTTP (`api_error`).

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use super::{current, SharedTable};
use crate::routes::{Route, RouteError, Routes, Table};

/// The routes and what follows from them.
pub struct RouteStore {
    /// The canonical routes; the lock serialises changes (and their writes).
    routes: tokio::sync::Mutex<Routes>,
    /// The compiled table the relay routes by, swapped whole.
    table: SharedTable,
    allowall: bool,
    /// `--max-routes`: a change that would grow the table past it is refused.
    max_routes: usize,
    state_file: PathBuf,
}

impl RouteStore {
    /// The store of `routes` (as loaded from `state_file`), compiled.
    pub fn new(
        routes: Routes,
        allowall: bool,
        max_routes: usize,
        state_file: PathBuf,
    ) -> RouteStore {
        let table = Table::build(&routes, allowall, None);
        RouteStore {
            routes: tokio::sync::Mutex::new(routes),
            table: Arc::new(RwLock::new(Arc::new(table))),
            allowall,
            max_routes,
            state_file,
        }
    }

    /// The table in force, shared with the relay.
    pub fn table(&self) -> SharedTable {
        self.table.clone()
    }

    /// Whether every unrouted topic is relayed as it is (`--allowall`).
    pub fn allowall(&self) -> bool {
        self.allowall
    }

    pub async fn list(&self) -> Vec<Route> {
        self.routes.lock().await.list()
    }

    pub async fn len(&self) -> usize {
        self.routes.lock().await.len()
    }

    pub async fn is_empty(&self) -> bool {
        self.len().await == 0
    }

    pub async fn get(&self, sourcetopic: &str) -> Option<Route> {
        self.routes.lock().await.get(sourcetopic).cloned()
    }

    /// `POST`: adds every route or none; returns them.
    pub async fn add(self: &Arc<Self>, items: Vec<Route>) -> Result<Vec<Route>, RouteError> {
        self.change(move |r| Ok((r.with_added(&items)?, items.clone())))
            .await
    }

    /// `PUT`: adds or replaces the given routes, or (`replace`) makes them
    /// the whole set; returns every route after.
    pub async fn upsert(
        self: &Arc<Self>,
        items: Vec<Route>,
        replace: bool,
    ) -> Result<Vec<Route>, RouteError> {
        self.change(move |r| {
            let next = if replace {
                Routes::replaced_by(&items)?
            } else {
                r.with_upserted(&items)?
            };
            let list = next.list();
            Ok((next, list))
        })
        .await
    }

    /// `PUT /events/TOPIC`: adds or replaces one route; whether it is new.
    pub async fn put(self: &Arc<Self>, route: Route) -> Result<bool, RouteError> {
        self.change(move |r| {
            let created = r.get(&route.sourcetopic).is_none();
            Ok((r.with_upserted(std::slice::from_ref(&route))?, created))
        })
        .await
    }

    /// `DELETE`: removes every named route or none; returns them.
    pub async fn remove(self: &Arc<Self>, keys: Vec<String>) -> Result<Vec<Route>, RouteError> {
        self.change(move |r| r.with_removed(&keys)).await
    }

    /// Applies a change: compute, check, persist, swap.
    ///
    /// It runs in a task of its own, so that a client hanging up (which
    /// drops the handler) cannot stop it between the write and the swap:
    /// the state file and the live table never differ.
    async fn change<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Routes) -> Result<(Routes, T), RouteError> + Send + 'static,
    ) -> Result<T, RouteError> {
        let store = self.clone();
        tokio::spawn(async move { store.change_now(f).await })
            .await
            .map_err(|e| RouteError::Internal(format!("the route change failed: {e}")))?
    }

    async fn change_now<T>(
        &self,
        f: impl FnOnce(&Routes) -> Result<(Routes, T), RouteError>,
    ) -> Result<T, RouteError> {
        let mut routes = self.routes.lock().await;
        let (next, out) = f(&routes)?;
        // A table already over the limit (from a state file written with a
        // higher one) may shrink or change, never grow.
        if next.len() > self.max_routes && next.len() > routes.len() {
            return Err(RouteError::TooMany {
                wanted: next.len(),
                limit: self.max_routes,
            });
        }
        let path = self.state_file.clone();
        let to_save = next.clone();
        let saved =
            tokio::task::spawn_blocking(move || crate::routes::state::save(&path, &to_save))
                .await
                .map_err(|e| RouteError::Internal(format!("the state writer failed: {e}")))?;
        if let Err(source) = saved {
            let e = RouteError::Save {
                path: self.state_file.clone(),
                source: Arc::new(source),
            };
            app_plugin::error!("{e}");
            return Err(e);
        }
        let table = Table::build(&next, self.allowall, Some(&current(&self.table)));
        *self.table.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(table);
        *routes = next;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &std::path::Path, max: usize) -> Arc<RouteStore> {
        Arc::new(RouteStore::new(
            Routes::default(),
            false,
            max,
            dir.join("r.routes.json"),
        ))
    }

    #[tokio::test]
    async fn a_change_is_written_then_swapped_in_or_nothing_changes() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path(), 2);
        let added = s.add(vec![Route::new("a", "x")]).await.unwrap();
        assert_eq!(added, vec![Route::new("a", "x")]);
        assert_eq!(
            crate::routes::state::load(&dir.path().join("r.routes.json"))
                .unwrap()
                .len(),
            1
        );
        assert!(current(&s.table()).route("a").is_some());
        // Over the limit: refused, nothing written or swapped.
        let e = s
            .upsert(vec![Route::new("b", ""), Route::new("c", "")], false)
            .await
            .unwrap_err();
        assert!(
            matches!(
                e,
                RouteError::TooMany {
                    wanted: 3,
                    limit: 2
                }
            ),
            "{e}"
        );
        assert_eq!(s.len().await, 1);
        assert!(current(&s.table()).route("b").is_none());
        assert!(matches!(
            s.add(vec![Route::new("a", "y")]).await,
            Err(RouteError::Exists(_))
        ));
        assert!(s.put(Route::new("b", "")).await.unwrap());
        assert!(!s.put(Route::new("b", "z")).await.unwrap());
        let removed = s.remove(vec!["a".into()]).await.unwrap();
        assert_eq!(removed, vec![Route::new("a", "x")]);
        assert!(matches!(
            s.remove(vec!["a".into()]).await,
            Err(RouteError::Missing(_))
        ));
    }

    #[tokio::test]
    async fn a_state_file_that_cannot_be_written_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        // The state file's directory is a file: the write fails.
        std::fs::write(dir.path().join("f"), "").unwrap();
        let s = Arc::new(RouteStore::new(
            Routes::default(),
            false,
            10,
            dir.path().join("f/r.routes.json"),
        ));
        let e = s.add(vec![Route::new("a", "")]).await.unwrap_err();
        assert!(matches!(e, RouteError::Save { .. }), "{e}");
        assert!(e.to_string().contains("nothing was changed"), "{e}");
        assert!(s.is_empty().await);
        assert!(current(&s.table()).route("a").is_none());
    }
}
