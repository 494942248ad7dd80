//! Where environment variables come from: the process, or a map in tests.

use std::collections::HashMap;

pub trait EnvSource {
    /// The variable's value; empty values count as unset.
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessEnv;

impl EnvSource for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    }
}

impl EnvSource for HashMap<String, String> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).filter(|v| !v.trim().is_empty()).cloned()
    }
}

pub const ENV_BASE_URL: &str = "PLANWAVE_LLM_BASE_URL";
pub const ENV_API_KEY: &str = "PLANWAVE_LLM_API_KEY";
pub const ENV_MODEL: &str = "PLANWAVE_LLM_MODEL";
pub const ENV_CONFIG: &str = "PLANWAVE_CONFIG";
pub const ENV_OPENAI_API_KEY: &str = "OPENAI_API_KEY";
pub const ENV_OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";
