//! The sessions of a [`PgStore`](crate::PgStore): a writer has exactly one (it holds the
//! collection's advisory lock); a reader has a small pool, so concurrent searches of one
//! `serve` process run side by side, and a session the server dropped (a restart, a network
//! cut) is replaced on the next read instead of failing every read after it.

use std::ops::{Deref, DerefMut};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use postgres::Client;

use crate::PgError;
use crate::connect::Server;

/// How a store reaches the server.
pub(crate) enum Sessions {
    /// A writer's one session.
    Writer(Mutex<Client>),
    /// A reader's pool.
    Readers(Pool),
}

/// Reader sessions, opened on demand up to `max`.
pub(crate) struct Pool {
    server: Server,
    state: Mutex<PoolState>,
    freed: Condvar,
    max: usize,
}

struct PoolState {
    // With the time each was last handed back.
    idle: Vec<(Box<Client>, Instant)>,
    open: usize,
}

/// A session idle longer than this is checked with a round trip before it is used: the server
/// may have dropped it meanwhile (a restart, an idle timeout), and a read should not fail for
/// that when a fresh session would work.
const CHECK_AFTER_IDLE: Duration = Duration::from_secs(2);
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// One session in use; a pooled one goes back when dropped.
pub(crate) enum Session<'a> {
    Locked(MutexGuard<'a, Client>),
    Leased {
        pool: &'a Pool,
        client: Option<Box<Client>>,
    },
}

impl Pool {
    /// A pool that starts with `first` (the session the store was opened with).
    pub(crate) fn new(server: Server, first: Client) -> Pool {
        // As many as a `serve` process has search slots, within reason for a shared server.
        let max = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8));
        Pool {
            server,
            state: Mutex::new(PoolState {
                idle: vec![(Box::new(first), Instant::now())],
                open: 1,
            }),
            freed: Condvar::new(),
            max,
        }
    }

    fn state(&self) -> MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn take(&self) -> Result<Session<'_>, PgError> {
        let mut state = self.state();
        loop {
            if let Some((mut client, since)) = state.idle.pop() {
                let stale = since.elapsed() > CHECK_AFTER_IDLE;
                if stale {
                    // The round trip runs without the pool's lock.
                    drop(state);
                    let alive = !client.is_closed() && client.is_valid(CHECK_TIMEOUT).is_ok();
                    state = self.state();
                    if !alive {
                        state.open -= 1;
                        continue;
                    }
                } else if client.is_closed() {
                    state.open -= 1;
                    continue;
                }
                return Ok(Session::Leased {
                    pool: self,
                    client: Some(client),
                });
            }
            if state.open < self.max {
                state.open += 1;
                drop(state);
                return match self.server.connect() {
                    Ok(client) => Ok(Session::Leased {
                        pool: self,
                        client: Some(Box::new(client)),
                    }),
                    Err(e) => {
                        self.state().open -= 1;
                        self.freed.notify_one();
                        Err(e)
                    }
                };
            }
            state = self.freed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn give(&self, client: Box<Client>) {
        let mut state = self.state();
        match client.is_closed() {
            true => state.open -= 1,
            false => state.idle.push((client, Instant::now())),
        }
        drop(state);
        self.freed.notify_one();
    }
}

impl Sessions {
    /// A session for one read or write.
    pub(crate) fn get(&self) -> Result<Session<'_>, PgError> {
        match self {
            // A panic while holding the client cannot leave a transaction open: dropping a
            // `Transaction` rolls it back.
            Sessions::Writer(client) => Ok(Session::Locked(
                client.lock().unwrap_or_else(|p| p.into_inner()),
            )),
            Sessions::Readers(pool) => pool.take(),
        }
    }
}

impl Deref for Session<'_> {
    type Target = Client;

    fn deref(&self) -> &Client {
        match self {
            Session::Locked(client) => client,
            Session::Leased { client, .. } => client.as_ref().expect("leased session"),
        }
    }
}

impl DerefMut for Session<'_> {
    fn deref_mut(&mut self) -> &mut Client {
        match self {
            Session::Locked(client) => client,
            Session::Leased { client, .. } => client.as_mut().expect("leased session"),
        }
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if let Session::Leased { pool, client } = self
            && let Some(client) = client.take()
        {
            pool.give(client);
        }
    }
}
