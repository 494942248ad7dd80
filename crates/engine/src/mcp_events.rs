//! `mcp_server` events: the registry's start-up status at the start of each run, and its
//! restarts and stops while the run lasts.

use std::sync::Arc;

use planwave_mcp::{McpRegistry, ServerEvent};

use crate::shared::RunShared;
use planwave_record::{Event, EventKind};

/// Listening to the registry for one run; dropping it stops.
pub(crate) struct Attached {
    mcp: Arc<McpRegistry>,
    id: u64,
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.mcp.remove_observer(self.id);
    }
}

/// Reports the servers' status and listens to them while the guard lives.
pub(crate) fn attach(shared: &RunShared) -> Option<Attached> {
    let mcp = shared.mcp.as_ref()?;
    for s in mcp.status() {
        shared.emit(EventKind::McpServer {
            server: s.server.clone(),
            status: if s.ok { "started" } else { "failed" }.into(),
            tools: s.ok.then_some(s.tools),
            error: s.error.clone(),
        });
    }
    // The journal and sink, not the run: the registry may outlive the run.
    let sink = shared.sink.clone();
    let journal = shared.journal.clone();
    let id = mcp.add_observer(Arc::new(move |e: ServerEvent| {
        let kind = match e {
            ServerEvent::Started { server, tools } => EventKind::McpServer {
                server,
                status: "started".into(),
                tools: Some(tools),
                error: None,
            },
            ServerEvent::Failed { server, error } => EventKind::McpServer {
                server,
                status: "failed".into(),
                tools: None,
                error: Some(error),
            },
            ServerEvent::Restarted { server, .. } => EventKind::McpServer {
                server,
                status: "restarted".into(),
                tools: None,
                error: None,
            },
            ServerEvent::Stopped { server } => EventKind::McpServer {
                server,
                status: "stopped".into(),
                tools: None,
                error: None,
            },
        };
        let event = Event::now(kind);
        if let Some(j) = &journal {
            j.append(event.clone(), None);
        }
        sink.emit(&event);
    }));
    Some(Attached {
        mcp: mcp.clone(),
        id,
    })
}
