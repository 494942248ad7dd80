//! Where traces go, from flags first and then the standard OpenTelemetry variables.

use std::fmt;

/// The OTLP transports planwave speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// `http/protobuf` (the OpenTelemetry default; port 4318, path `/v1/traces`).
    HttpProtobuf,
    /// `grpc` (port 4317).
    Grpc,
}

impl OtlpProtocol {
    pub fn parse(s: &str) -> Result<OtlpProtocol, OtlpSettingsError> {
        match s.trim() {
            "http/protobuf" | "http" => Ok(OtlpProtocol::HttpProtobuf),
            "grpc" => Ok(OtlpProtocol::Grpc),
            other => Err(OtlpSettingsError(format!(
                "OTLP protocol '{other}' is not supported (use http/protobuf or grpc)"
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            OtlpProtocol::HttpProtobuf => "http/protobuf",
            OtlpProtocol::Grpc => "grpc",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OtlpSettingsError(pub String);

/// Resolved export settings; `None` from [`OtlpSettings::resolve`] means no export.
#[derive(Clone, PartialEq, Eq)]
pub struct OtlpSettings {
    /// The full URL spans are sent to (for HTTP including `/v1/traces`).
    pub endpoint: String,
    pub protocol: OtlpProtocol,
    pub service_name: String,
    /// Record prompt and completion text on `chat` spans (off unless asked for: prompts can
    /// hold anything the user typed).
    pub trace_content: bool,
}

impl fmt::Debug for OtlpSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} as {}",
            self.protocol.as_str(),
            self.endpoint,
            self.service_name
        )
    }
}

pub const DEFAULT_SERVICE_NAME: &str = "planwave";

impl OtlpSettings {
    /// Flags win over the environment. The endpoint comes from `--otlp-endpoint` (a base URL,
    /// like `OTEL_EXPORTER_OTLP_ENDPOINT`), else `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as
    /// is), else `OTEL_EXPORTER_OTLP_ENDPOINT`; with none of them nothing is exported.
    /// `OTEL_SDK_DISABLED=true` turns export off unless the flag asks for it.
    pub fn resolve(
        endpoint_flag: Option<&str>,
        protocol_flag: Option<&str>,
        trace_content: bool,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<OtlpSettings>, OtlpSettingsError> {
        let env = |k: &str| {
            env(k)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let protocol = match protocol_flag {
            Some(p) => OtlpProtocol::parse(p)?,
            None => match env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                .or_else(|| env("OTEL_EXPORTER_OTLP_PROTOCOL"))
            {
                Some(p) => OtlpProtocol::parse(&p)?,
                None => OtlpProtocol::HttpProtobuf,
            },
        };
        let disabled = env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let (endpoint, is_base) = match endpoint_flag.map(str::trim).filter(|s| !s.is_empty()) {
            Some(e) => (e.to_owned(), true),
            None if disabled => return Ok(None),
            None => match env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
                Some(e) => (e, false),
                None => match env("OTEL_EXPORTER_OTLP_ENDPOINT") {
                    Some(e) => (e, true),
                    None => return Ok(None),
                },
            },
        };
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(OtlpSettingsError(format!(
                "OTLP endpoint '{endpoint}' must start with http:// or https://"
            )));
        }
        let endpoint = match protocol {
            OtlpProtocol::HttpProtobuf if is_base => {
                let base = endpoint.trim_end_matches('/');
                if base.ends_with("/v1/traces") {
                    base.to_owned()
                } else {
                    format!("{base}/v1/traces")
                }
            }
            _ => endpoint,
        };
        Ok(Some(OtlpSettings {
            endpoint,
            protocol,
            service_name: env("OTEL_SERVICE_NAME").unwrap_or_else(|| DEFAULT_SERVICE_NAME.into()),
            trace_content,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn resolve(
        flag: Option<&str>,
        proto: Option<&str>,
        env: &[(&str, &str)],
    ) -> Result<Option<OtlpSettings>, OtlpSettingsError> {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        OtlpSettings::resolve(flag, proto, false, |k| env.get(k).cloned())
    }

    #[test]
    fn nothing_configured_means_no_export() {
        assert_eq!(resolve(None, None, &[]), Ok(None));
        assert_eq!(
            resolve(
                None,
                None,
                &[
                    ("OTEL_SDK_DISABLED", "true"),
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")
                ]
            ),
            Ok(None)
        );
    }

    #[test]
    fn base_endpoints_get_the_traces_path_for_http_only() {
        let s = resolve(Some("http://127.0.0.1:4318/"), None, &[])
            .unwrap()
            .unwrap();
        assert_eq!(s.endpoint, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(s.protocol, OtlpProtocol::HttpProtobuf);
        assert_eq!(s.service_name, "planwave");
        let s = resolve(
            None,
            None,
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://j:4318")],
        )
        .unwrap()
        .unwrap();
        assert_eq!(s.endpoint, "http://j:4318/v1/traces");
        let s = resolve(
            None,
            None,
            &[
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://j:9999/custom"),
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://ignored:4318"),
                ("OTEL_SERVICE_NAME", "mine"),
            ],
        )
        .unwrap()
        .unwrap();
        assert_eq!(s.endpoint, "http://j:9999/custom");
        assert_eq!(s.service_name, "mine");
        let s = resolve(
            Some("http://j:4317"),
            None,
            &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (s.endpoint.as_str(), s.protocol),
            ("http://j:4317", OtlpProtocol::Grpc)
        );
    }

    #[test]
    fn bad_values_are_clear_errors() {
        assert_eq!(
            resolve(Some("http://x"), Some("http/json"), &[]),
            Err(OtlpSettingsError(
                "OTLP protocol 'http/json' is not supported (use http/protobuf or grpc)".into()
            ))
        );
        assert_eq!(
            resolve(Some("localhost:4318"), None, &[]),
            Err(OtlpSettingsError(
                "OTLP endpoint 'localhost:4318' must start with http:// or https://".into()
            ))
        );
    }
}
