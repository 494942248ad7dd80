//! What every actor of one run shares, behind one `Arc` so spawning a subagent is cheap.

use std::sync::Arc;

use planwave_llm::LlmProvider;
use planwave_plan::ValidatedPlan;

use crate::config::RunConfig;
use crate::event::{Event, EventKind, EventSink};
use crate::prompt::PromptSet;

pub struct RunShared {
    pub run_id: uuid::Uuid,
    pub plan: Arc<ValidatedPlan>,
    pub provider: Arc<dyn LlmProvider>,
    pub prompts: Arc<dyn PromptSet>,
    pub sink: Arc<dyn EventSink>,
    pub config: RunConfig,
}

impl RunShared {
    pub fn emit(&self, kind: EventKind) {
        self.sink.emit(&Event::now(kind));
    }
}
