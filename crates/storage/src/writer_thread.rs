//! The lifecycle the journal and the JSON-lines event stream share: one thread owns the
//! writer and takes commands from a channel until it is closed; closing waits for it to
//! finish what is queued and returns its result. Serialization and I/O stay off the actors'
//! threads.

use std::io;
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

pub(crate) struct WriterThread<C, E> {
    tx: Mutex<Option<Sender<C>>>,
    thread: Mutex<Option<JoinHandle<Result<(), E>>>>,
}

impl<C: Send + 'static, E: Send + 'static> WriterThread<C, E> {
    /// Starts `body` on a thread named `name`; it gets every command sent until
    /// [`WriterThread::close`].
    pub(crate) fn spawn(
        name: &str,
        body: impl FnOnce(Receiver<C>) -> Result<(), E> + Send + 'static,
    ) -> io::Result<Self> {
        let (tx, rx) = mpsc::channel::<C>();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || body(rx))?;
        Ok(WriterThread {
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// A writer that takes nothing (its thread could not start).
    pub(crate) fn closed() -> Self {
        WriterThread {
            tx: Mutex::new(None),
            thread: Mutex::new(None),
        }
    }

    /// Queues `cmd`; gives it back when the writer is closed or gone.
    pub(crate) fn send(&self, cmd: C) -> Result<(), C> {
        match self.tx.lock() {
            Ok(guard) => match guard.as_ref() {
                Some(tx) => tx.send(cmd).map_err(|e| e.0),
                None => Err(cmd),
            },
            Err(_) => Err(cmd),
        }
    }

    /// Stops taking commands and waits for the thread to write what is queued: its result,
    /// `Ok` when it was closed before, or `panicked` when it panicked.
    pub(crate) fn close(&self, panicked: impl FnOnce() -> E) -> Result<(), E> {
        if let Ok(mut guard) = self.tx.lock() {
            guard.take();
        }
        let handle = self.thread.lock().ok().and_then(|mut g| g.take());
        match handle {
            Some(h) => h.join().unwrap_or_else(|_| Err(panicked())),
            None => Ok(()),
        }
    }
}
