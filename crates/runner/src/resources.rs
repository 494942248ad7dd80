//! What a job runs with: the model client, the prompt templates and the MCP servers. Built
//! (and checked) before any server starts; the servers are shut down by [`Resources::scope`]
//! on every way out, errors included, so no path can leave child processes behind.

use std::sync::Arc;

use planwave_config::{LlmChoice, McpServers, Settings};
use planwave_engine::{RunConfig, RunRequest};
use planwave_llm::LlmProvider;
use planwave_llm::openai::OpenAiProvider;
use planwave_mcp::McpRegistry;
use planwave_plan::{ToolCatalog, ValidatedPlan};
use planwave_prompts::Templates;
use planwave_sim::{SimConfig, SimProvider};
use planwave_storage::{Journal, RunDir};

use crate::provider_batches::{JobBatches, JobShare, Listening, ProviderBatches};
use crate::{InvalidInput, Notes};

/// The model client and prompts (many jobs may share one: one HTTP client, one rate
/// limiter), and the MCP servers once started.
#[derive(Clone)]
pub struct Resources {
    pub provider: Arc<dyn LlmProvider>,
    pub templates: Arc<Templates>,
    pub mcp: Option<Arc<McpRegistry>>,
    /// The plan cache the settings name, where each run's model-call times are recorded as
    /// it ends (for the duration `plan` and `waves` estimate).
    pub call_times: Option<crate::PlanCache>,
    /// The Batch API client (`--batch-api`), which is also `provider` (under its wrappers).
    pub batch: Option<ProviderBatches>,
    /// A job's share of it, once the job joined ([`Resources::join_batches`]).
    pub batch_job: Option<JobShare>,
}

impl Resources {
    /// The engine's request for a run of `plan` with these resources (model client,
    /// templates, MCP tools), into `out` with its journal `events`; the rest as a plain run
    /// has it (a fresh id, default settings, no deadline, preset or shared slots), for the
    /// caller to set.
    pub(crate) fn request(
        &self,
        plan: Arc<ValidatedPlan>,
        out: &RunDir,
        events: &Arc<Journal>,
    ) -> RunRequest {
        RunRequest {
            run_id: uuid::Uuid::new_v4(),
            plan,
            provider: self.provider.clone(),
            prompts: self.templates.clone(),
            sink: Arc::new(planwave_record::NullSink),
            journal: Some(events.clone()),
            config: RunConfig::default(),
            deadline: None,
            slots: None,
            output: Some(out.clone()),
            cancel: tokio_util::sync::CancellationToken::new(),
            preset: Vec::new(),
            mcp: self.mcp.clone(),
        }
    }

    /// The templates and the model client the settings ask for. Nothing is started yet.
    /// `wrap` decorates the provider (tracing); the line saying which model answers (never
    /// the key) goes to `notes`.
    pub fn prepare(
        settings: &Settings,
        sim: SimConfig,
        wrap: impl FnOnce(Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider>,
        notes: &dyn Notes,
    ) -> crate::Result<Resources> {
        let templates = Templates::load(settings.prompts_dir.as_deref())
            .map(Arc::new)
            .map_err(|e| InvalidInput::one("prompts", e.to_string()))?;
        let batch = ProviderBatches::from_settings(settings, notes)?;
        let provider = match &batch {
            Some(b) => b.as_provider(),
            None => model_client(settings, sim, notes)?,
        };
        // Each role's output cap, on every request that has no bound of its own.
        let provider = planwave_llm::CappedProvider::wrap(provider, settings.output_caps);
        Ok(Resources {
            provider: wrap(provider),
            templates,
            mcp: None,
            call_times: settings.plan_cache.as_ref().map(crate::PlanCache::new),
            batch,
            batch_job: None,
        })
    }

    /// With the Batch API, these become one job's: its calls are the job's, recorded in
    /// `dir`'s side file (the job's run directory), where an earlier process of the job
    /// recorded the calls it submitted (they wait for their batch again). The job's share
    /// ends when the guard is dropped.
    pub async fn join_batches(
        &mut self,
        dir: &planwave_storage::RunDir,
    ) -> crate::Result<Option<JobBatches>> {
        let Some(b) = &self.batch else {
            return Ok(None);
        };
        let job = b.join(dir).await?;
        let share = job.share();
        self.provider = share.wrap(self.provider.clone());
        self.batch_job = Some(share);
        Ok(Some(job))
    }

    /// With the Batch API: `sink` hears of the job's batches' states until the guard is
    /// dropped.
    pub fn listen_to_batches(
        &self,
        sink: Arc<dyn planwave_record::EventSink>,
    ) -> Option<Listening> {
        self.batch_job.as_ref().map(|b| b.listen(sink))
    }

    /// Starts the configured MCP servers (in parallel). Servers that fail are noted by name
    /// and the job goes on without them.
    pub async fn start_mcp(
        mut self,
        servers: Option<&McpServers>,
        quiet: bool,
        notes: &dyn Notes,
    ) -> Resources {
        self.mcp = start_mcp(servers, quiet, notes).await;
        self
    }

    /// Runs `work` with these resources, then shuts the MCP servers down whatever `work`
    /// returned.
    pub async fn scope<T, E>(
        self,
        work: impl AsyncFnOnce(&Resources) -> Result<T, E>,
    ) -> Result<T, E> {
        let result = work(&self).await;
        if let Some(m) = &self.mcp {
            m.shutdown().await;
        }
        result
    }

    /// The tool names plans are checked against.
    pub fn catalog(&self) -> ToolCatalog {
        catalog(self.mcp.as_deref())
    }

    /// The tools as the planner's prompt lists them: name, description, input schema.
    pub fn planner_tools(&self) -> Vec<planwave_prompts::PlannerTool> {
        let Some(registry) = &self.mcp else {
            return Vec::new();
        };
        registry
            .tools()
            .iter()
            .map(|t| planwave_prompts::PlannerTool {
                name: t.name.clone(),
                description: t.description.trim().to_owned(),
                input_schema: t.input_schema.to_string(),
            })
            .collect()
    }
}

/// The model client the settings ask for; the line saying which model answers (never the
/// key) goes to `notes`.
pub fn model_client(
    settings: &Settings,
    sim: SimConfig,
    notes: &dyn Notes,
) -> crate::Result<Arc<dyn LlmProvider>> {
    Ok(match &settings.llm {
        LlmChoice::Sim => {
            notes.note(
                "planwave: using the simulated LLM (no model configured, or --llm sim): sections are generated text, not research",
            );
            Arc::new(SimProvider::new(sim))
        }
        LlmChoice::OpenAi {
            config: o,
            api_key_source,
        } => {
            let client = OpenAiProvider::new((**o).clone())?;
            let key = match api_key_source {
                Some(src) => format!("key from {src}"),
                None => "no API key".into(),
            };
            let stream = if o.stream {
                "streaming"
            } else {
                "not streaming"
            };
            notes.note(&format!(
                "planwave: model {} via {} at {} ({key}, {stream})",
                o.models.default,
                o.provider,
                planwave_redact::redact_url(&o.base_url)
            ));
            Arc::new(client)
        }
    })
}

/// The tools `servers` offer, for checking a plan against them (`planwave validate
/// --mcp-config`): starts the servers, lists their tools (servers that failed go in as down,
/// with their reason) and shuts them down again.
pub async fn tool_catalog(servers: &McpServers, notes: &dyn Notes) -> ToolCatalog {
    let registry = start_mcp(Some(servers), true, notes).await;
    let tools = catalog(registry.as_deref());
    if let Some(r) = registry {
        r.shutdown().await;
    }
    tools
}

/// Starts the configured MCP servers (in parallel); `None` when none are configured.
/// Servers that fail are noted by name; the caller shuts the registry down.
pub async fn start_mcp(
    servers: Option<&McpServers>,
    quiet: bool,
    notes: &dyn Notes,
) -> Option<Arc<McpRegistry>> {
    let servers = servers?;
    let registry = McpRegistry::start(&servers.config, servers.options.clone()).await;
    for f in registry.failures() {
        notes.note(&format!("warning: {f}; continuing without it"));
    }
    if !quiet {
        let up = registry.status().iter().filter(|s| s.ok).count();
        notes.note(&format!(
            "mcp: {} tools from {up} of {} servers",
            registry.tools().len(),
            registry.status().len()
        ));
    }
    Some(Arc::new(registry))
}

/// The tool names plans are checked against (empty without servers: tool steps then fail
/// validation, naming the tool).
pub fn catalog(registry: Option<&McpRegistry>) -> ToolCatalog {
    let Some(r) = registry else {
        return ToolCatalog::default();
    };
    ToolCatalog::new(r.tools().iter().map(|t| t.name.clone()))
        .with_servers_down(r.failures().into_iter().map(|f| (f.server, f.reason)))
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use planwave_mcp::{McpConfig, RegistryOptions};

    use super::*;

    #[derive(Default)]
    struct Lines(Mutex<Vec<String>>);

    impl Notes for Lines {
        fn note(&self, line: &str) {
            self.0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(line.to_owned());
        }
    }

    #[tokio::test]
    async fn a_server_that_does_not_start_is_noted_and_offers_no_tools() {
        let config = McpConfig::parse(
            r#"{"mcpServers": {"gone": {"command": "/nonexistent/planwave-mcp-server"}}}"#,
            "test",
        )
        .unwrap_or_else(|e| panic!("config: {e:?}"));
        let servers = McpServers {
            config,
            options: RegistryOptions::default(),
        };
        let notes = Lines::default();
        let tools = tool_catalog(&servers, &notes).await;
        assert_eq!(tools.names().count(), 0);
        let lines = notes.0.into_inner().unwrap_or_else(|e| e.into_inner());
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("warning: ") && lines[0].contains("gone"),
            "{lines:?}"
        );
        assert!(lines[0].ends_with("; continuing without it"), "{lines:?}");
    }
}
