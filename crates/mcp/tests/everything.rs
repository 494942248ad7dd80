//! The registry against `@modelcontextprotocol/server-everything` over stdio (installed by
//! `.ci/peers` into `$PLANWAVE_PEERS_DIR`).

use std::path::PathBuf;
use std::time::Duration;

use planwave_mcp::{McpConfig, McpRegistry, RegistryOptions, ToolError};

fn everything() -> String {
    let dir = std::env::var_os("PLANWAVE_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-peers")
        });
    let p = dir.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        p.exists(),
        "test peer {} is missing: run .ci/peers",
        p.display()
    );
    p.display().to_string()
}

fn config(servers: &[&str]) -> McpConfig {
    let entries: Vec<String> = servers
        .iter()
        .map(|name| {
            format!(
                r#""{name}": {{"command": "node", "args": [{:?}, "stdio"]}}"#,
                everything()
            )
        })
        .collect();
    McpConfig::parse(
        &format!(r#"{{"mcpServers": {{{}}}}}"#, entries.join(",")),
        "test",
    )
    .expect("config")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_calls_times_out_and_prefixes_clashing_names() {
    let registry = McpRegistry::start(
        &config(&["a", "b"]),
        RegistryOptions {
            call_timeout: Duration::from_secs(2),
            ..RegistryOptions::default()
        },
    )
    .await;
    assert!(registry.failures().is_empty(), "{:?}", registry.failures());
    let names: Vec<&str> = registry.tools().iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"a/get-sum") && names.contains(&"b/get-sum"),
        "{names:?}"
    );
    assert!(
        !names.contains(&"get-sum"),
        "clashing names are prefixed: {names:?}"
    );

    let out = registry
        .call("a/get-sum", serde_json::json!({"a": 19, "b": 23}))
        .await
        .expect("get-sum");
    assert!(out.text.contains("42"), "{out:?}");
    assert!(!out.is_error);

    let err = registry
        .call(
            "b/trigger-long-running-operation",
            serde_json::json!({"duration": 3600, "steps": 2}),
        )
        .await
        .expect_err("never answers within the timeout");
    assert!(
        matches!(err, ToolError::Timeout { ref server, .. } if server == "b"),
        "{err}"
    );
    assert!(err.is_retryable());

    // The server still serves after a timed-out call.
    let out = registry
        .call("b/echo", serde_json::json!({"message": "still here"}))
        .await
        .expect("echo");
    assert!(out.text.contains("still here"), "{out:?}");
    assert!(matches!(
        registry.call("nope", serde_json::json!({})).await,
        Err(ToolError::UnknownTool { .. })
    ));
    registry.shutdown().await;
}

#[tokio::test]
async fn a_server_that_cannot_start_is_reported_by_name() {
    let config = McpConfig::parse(
        r#"{"mcpServers": {"ghost": {"command": "/nonexistent/planwave-mcp-server"}}}"#,
        "t",
    )
    .expect("config");
    let registry = McpRegistry::start(&config, RegistryOptions::default()).await;
    let f = registry.failures();
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].server, "ghost");
    assert!(
        f[0].to_string()
            .starts_with("MCP server ghost: cannot start"),
        "{}",
        f[0]
    );
    assert!(registry.tools().is_empty());
}

/// With one call in flight per server, a quick call waits behind a stuck one; with more it
/// does not. Checked by completion order, not by time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_server_has_a_concurrency_limit() {
    for (limit, quick_first) in [(1, false), (4, true)] {
        let registry = McpRegistry::start(
            &config(&["only"]),
            RegistryOptions {
                call_timeout: Duration::from_secs(2),
                max_concurrent_per_server: limit,
                ..RegistryOptions::default()
            },
        )
        .await;
        let order = std::sync::Mutex::new(Vec::new());
        // `join!` polls `stuck` first: it takes the permit (and sends its request) before
        // `quick` asks for one.
        let stuck = async {
            let r = registry
                .call(
                    "trigger-long-running-operation",
                    serde_json::json!({"duration": 3600, "steps": 2}),
                )
                .await;
            order.lock().expect("lock").push("stuck");
            r
        };
        let quick = async {
            let r = registry
                .call("echo", serde_json::json!({"message": "hi"}))
                .await;
            order.lock().expect("lock").push("quick");
            r
        };
        let (s, q) = tokio::join!(stuck, quick);
        assert!(matches!(s, Err(ToolError::Timeout { .. })), "{s:?}");
        assert!(q.is_ok(), "{q:?}");
        let order = order.into_inner().expect("lock");
        assert_eq!(order[0] == "quick", quick_first, "limit {limit}: {order:?}");
        registry.shutdown().await;
    }
}
