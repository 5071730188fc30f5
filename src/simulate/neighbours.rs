//! Several ApplicationSets simulated together (`flotilla simulate A --with B`, or a file of
//! several): each rollout publishes its status here after every pass and reads the others' as
//! the input of its cross-ApplicationSet gates ([`flotilla_core::rollout::external`]). A
//! rollout that has nothing left but to wait for another sleeps until one changes; once every
//! rollout still running only waits, nothing can change any more and they all stop.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, PoisonError};

use tokio::sync::watch;

use flotilla_core::rollout::external::{ExternalApplicationSet, ExternalRollout, Lookup};

/// The rollouts of one simulation of several ApplicationSets.
pub struct Neighbours {
    board: Mutex<Board>,
    changed: watch::Sender<u64>,
}

/// What the rollouts published, and which are still running and which only wait.
struct Board {
    /// (namespace, name) → its strategy and last status.
    rollouts: BTreeMap<(String, String), ExternalRollout>,
    /// How many rollouts have not ended.
    running: usize,
    /// The running rollouts that only wait for another ApplicationSet.
    idle: BTreeSet<String>,
}

impl Neighbours {
    /// A board for `count` rollouts.
    #[must_use]
    pub fn new(count: usize) -> Self {
        Self {
            board: Mutex::new(Board {
                rollouts: BTreeMap::new(),
                running: count,
                idle: BTreeSet::new(),
            }),
            changed: watch::Sender::new(0),
        }
    }

    fn board(&self) -> std::sync::MutexGuard<'_, Board> {
        self.board.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn bump(&self) {
        self.changed.send_modify(|version| *version += 1);
    }

    /// A receiver told of every change.
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Records the status of the ApplicationSet `name` in `namespace` after a pass. A change
    /// wakes every waiting rollout: none counts as only waiting until it has read it.
    pub fn publish(&self, namespace: &str, name: &str, rollout: ExternalRollout) {
        let key = (namespace.to_owned(), name.to_owned());
        let changed = {
            let mut board = self.board();
            let changed = board.rollouts.get(&key) != Some(&rollout);
            if changed {
                board.rollouts.insert(key, rollout);
                board.idle.clear();
            }
            changed
        };
        if changed {
            self.bump();
        }
    }

    /// Every ApplicationSet of the simulation, as a controller would read them.
    #[must_use]
    pub fn read(&self) -> Vec<ExternalApplicationSet> {
        self.board()
            .rollouts
            .iter()
            .map(|((namespace, name), rollout)| ExternalApplicationSet {
                namespace: namespace.clone(),
                name: name.clone(),
                lookup: Lookup::Found(Box::new(rollout.clone())),
                // Each simulated rollout is passed again when another one moves.
                watched: true,
            })
            .collect()
    }

    /// Marks `name` as only waiting for other ApplicationSets; true when every running rollout
    /// now only waits (nothing can change any more: they all stop).
    pub fn idle(&self, name: &str) -> bool {
        let stalled = {
            let mut board = self.board();
            board.idle.insert(name.to_owned());
            board.idle.len() >= board.running
        };
        if stalled {
            self.bump();
        }
        stalled
    }

    /// Whether every running rollout only waits.
    #[must_use]
    pub fn stalled(&self) -> bool {
        let board = self.board();
        board.idle.len() >= board.running
    }

    /// `name` runs again (another ApplicationSet changed).
    pub fn busy(&self, name: &str) {
        self.board().idle.remove(name);
    }

    /// The rollout of `name` ended.
    pub fn finished(&self, name: &str) {
        {
            let mut board = self.board();
            board.idle.remove(name);
            board.running = board.running.saturating_sub(1);
        }
        self.bump();
    }
}
