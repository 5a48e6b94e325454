//! SIGINT and SIGTERM end a sync cleanly before its commit point; a second signal ends the
//! process at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use signal_hook::consts::{SIGINT, SIGTERM};

/// The cancel flag a signal sets, and which signal it was.
pub struct Signals {
    cancel: Arc<AtomicBool>,
    which: Arc<AtomicUsize>,
}

impl Signals {
    /// Installs the handlers. Failing to install them is not fatal: the command then simply
    /// cannot be cancelled cleanly.
    pub fn install() -> Signals {
        let cancel = Arc::new(AtomicBool::new(false));
        let which = Arc::new(AtomicUsize::new(0));
        for signal in [SIGINT, SIGTERM] {
            // Registered first, so it sees the flag as it was before this signal: only a
            // second signal exits immediately (redb's commit protocol keeps even that safe).
            let exit = signal_hook::flag::register_conditional_shutdown(
                signal,
                128 + signal,
                cancel.clone(),
            );
            let flag = signal_hook::flag::register(signal, cancel.clone());
            let record = signal_hook::flag::register_usize(signal, which.clone(), signal as usize);
            if let Err(e) = exit.and(flag).and(record) {
                log::warn!("cannot install a handler for signal {signal}: {e}");
            }
        }
        Signals { cancel, which }
    }

    /// The flag long operations check.
    pub fn cancel_flag(&self) -> &AtomicBool {
        &self.cancel
    }

    /// The conventional exit code (128 + signal number) once a signal arrived.
    pub fn exit_code(&self) -> Option<u8> {
        match self.which.load(Ordering::SeqCst) {
            0 => None,
            signal => Some(128 + signal as u8),
        }
    }
}
