//! Output caps per role ([`OutputCaps`]): `--max-output ROLE=TOKENS`, else `[llm.output_caps]`,
//! else `[llm] max_tokens` for every role, else the defaults for a real server (none for the
//! simulator, whose answers are sized by its own flags).

use planwave_llm::OutputCaps;
use serde::Deserialize;

use crate::SettingsError;
use crate::file::ConfigFile;
use crate::flags::{Flags, LlmKind};

/// `[llm.output_caps]`: one key per role; 0 means no cap for that role.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputCapsSection {
    pub planner: Option<u32>,
    pub subagent: Option<u32>,
    pub integrator: Option<u32>,
    pub evaluator: Option<u32>,
    pub reflector: Option<u32>,
    pub llm_call: Option<u32>,
}

pub(crate) fn resolve(
    kind: LlmKind,
    file: &ConfigFile,
    flags: &Flags,
) -> Result<OutputCaps, SettingsError> {
    let l = &file.llm;
    let mut caps = match (kind, l.max_tokens) {
        (_, Some(n)) => OutputCaps::all(n),
        (LlmKind::Sim, None) => OutputCaps::default(),
        (LlmKind::OpenAi, None) => OutputCaps::DEFAULT,
    };
    let c = &l.output_caps;
    let from_file = [
        ("planner", c.planner),
        ("subagent", c.subagent),
        ("integrator", c.integrator),
        ("evaluator", c.evaluator),
        ("reflector", c.reflector),
        ("llm_call", c.llm_call),
    ];
    let given = from_file
        .into_iter()
        .filter_map(|(role, n)| Some((role.to_owned(), n?)))
        .chain(flags.max_output.iter().cloned());
    for (role, n) in given {
        let slot = caps.slot(&role).ok_or_else(|| {
            SettingsError::Invalid(format!(
                "output cap for {role:?}: expected one of {}",
                OutputCaps::ROLES.join(", ")
            ))
        })?;
        *slot = (n > 0).then_some(n);
    }
    Ok(caps)
}

/// `ROLE=TOKENS[,ROLE=TOKENS...]` (`--max-output`): each role one of [`OutputCaps::ROLES`],
/// TOKENS a whole number (0: no cap).
pub fn parse_max_output(s: &str) -> Result<Vec<(String, u32)>, String> {
    s.split(',')
        .map(|part| {
            let (role, n) = part
                .split_once('=')
                .ok_or_else(|| format!("{part:?} is not ROLE=TOKENS"))?;
            let role = role.trim();
            if !OutputCaps::ROLES.contains(&role) {
                return Err(format!(
                    "unknown role {role:?} (expected {})",
                    OutputCaps::ROLES.join(", ")
                ));
            }
            let n = n
                .trim()
                .parse::<u32>()
                .map_err(|e| format!("{role}={n}: {e} (a whole number of tokens, 0 for no cap)"))?;
            Ok((role.to_owned(), n))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_beat_the_file_which_beats_the_defaults() {
        let file = ConfigFile::parse(
            "[llm]\nmodel = \"m\"\n[llm.output_caps]\nplanner = 900\nsubagent = 0\n",
            None,
        )
        .expect("file");
        let flags = Flags {
            max_output: parse_max_output("planner=300,llm_call=50").expect("flag"),
            ..Flags::default()
        };
        let caps = resolve(LlmKind::OpenAi, &file, &flags).expect("caps");
        assert_eq!(caps.planner, Some(300));
        assert_eq!(caps.subagent, None);
        assert_eq!(caps.llm_call, Some(50));
        assert_eq!(caps.evaluator, OutputCaps::DEFAULT.evaluator);
        let sim = resolve(LlmKind::Sim, &ConfigFile::default(), &Flags::default());
        assert_eq!(sim.expect("caps"), OutputCaps::default());
        assert!(parse_max_output("writer=3").is_err());
        assert!(parse_max_output("planner").is_err());
    }
}
