//! `[mcp]` and the tool flags: read only by commands that run tools, servers merged, limits
//! checked only when there are servers, problems reported under the names users see.

use std::time::Duration;

use planwave_engine::ToolProtocol;

use super::*;

fn file(text: &str) -> ConfigFile {
    ConfigFile::parse(text, None).expect("parse")
}

fn with_tools(mcp: McpFlags) -> Flags {
    Flags {
        mcp: Some(mcp),
        ..Flags::default()
    }
}

#[test]
fn a_command_without_tools_leaves_mcp_unread() {
    let f = file("[mcp]\nconfig = \"/nonexistent/mcp.json\"\ntool_protocol = \"smoke\"\n");
    let s = resolve_settings(&f, &env(&[]), &Flags::default()).expect("not read");
    assert!(s.mcp.is_none());
    assert_eq!(s.run.tool_protocol, ToolProtocol::default());
}

#[test]
fn tool_protocol_and_rounds_come_from_flag_then_file() {
    let f = file("[mcp]\ntool_protocol = \"native\"\nmax_tool_rounds = 2\n");
    let s = resolve_settings(&f, &env(&[]), &with_tools(McpFlags::default())).expect("ok");
    assert_eq!(
        (s.run.tool_protocol, s.run.max_tool_rounds),
        (ToolProtocol::Native, 2)
    );
    assert!(s.mcp.is_none(), "no servers configured");
    let flags = with_tools(McpFlags {
        tool_protocol: Some(ToolProtocol::Json),
        max_tool_rounds: Some(9),
        ..McpFlags::default()
    });
    let s = resolve_settings(&f, &env(&[]), &flags).expect("ok");
    assert_eq!(
        (s.run.tool_protocol, s.run.max_tool_rounds),
        (ToolProtocol::Json, 9)
    );
}

#[test]
fn a_bad_tool_protocol_is_reported_under_its_setting() {
    let f = file("[mcp]\ntool_protocol = \"xml\"\n");
    let err = resolve_settings(&f, &env(&[]), &with_tools(McpFlags::default())).expect_err("xml");
    assert_eq!(err.source_name(), "[mcp] tool_protocol");
    assert_eq!(
        err.problems(),
        vec!["unknown tool protocol \"xml\" (expected json or native)".to_owned()]
    );
}

#[test]
fn inline_servers_replace_same_named_file_servers_and_timeouts_apply() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("mcp.json");
    std::fs::write(
        &json,
        r#"{"mcpServers": {"a": {"command": "file-a"}, "b": {"command": "file-b"}}}"#,
    )
    .expect("write");
    let toml_path = dir.path().join("planwave.toml");
    let text = "[mcp]\nconfig = \"mcp.json\"\nstart_timeout_secs = 5\nmax_concurrent_per_server = 2\n[mcp.servers.b]\ncommand = \"inline-b\"\n[mcp.servers.c]\ncommand = \"inline-c\"\n";
    let f = ConfigFile::parse(text, Some(&toml_path)).expect("parse");
    let flags = with_tools(McpFlags {
        tool_timeout_secs: Some(1.5),
        ..McpFlags::default()
    });
    let s = resolve_settings(&f, &env(&[]), &flags).expect("ok");
    let m = s.mcp.expect("servers");
    let names: Vec<&str> = m.config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert!(
        format!("{:?}", m.config.servers[1].transport).contains("inline-b"),
        "{:?}",
        m.config.servers[1]
    );
    assert_eq!(m.options.connect_timeout, Duration::from_secs(5));
    assert_eq!(m.options.call_timeout, Duration::from_secs_f64(1.5));
    assert_eq!(m.options.max_concurrent_per_server, 2);

    let only_flag = with_tools(McpFlags {
        config: Some(json.clone()),
        ..McpFlags::default()
    });
    let s = resolve_settings(&f, &env(&[]), &only_flag).expect("ok");
    assert_eq!(
        s.mcp.expect("servers").config.servers.len(),
        2,
        "--mcp-config replaces [mcp]"
    );
}

#[test]
fn timeouts_are_checked_only_with_servers_and_named_after_the_flag() {
    let bad = McpFlags {
        tool_timeout_secs: Some(0.0),
        ..McpFlags::default()
    };
    let s = resolve_settings(&ConfigFile::default(), &env(&[]), &with_tools(bad.clone()));
    assert!(s.is_ok(), "no servers: the timeout is unused");
    let f = file("[mcp.servers.a]\ncommand = \"a\"\n");
    let err = resolve_settings(&f, &env(&[]), &with_tools(bad)).expect_err("zero");
    assert_eq!(
        (err.source_name(), err.problems()),
        (
            "--tool-timeout",
            vec!["0 is not a positive number of seconds".to_owned()]
        )
    );
}

#[test]
fn a_missing_server_file_names_itself() {
    let flags = with_tools(McpFlags {
        config: Some("/nonexistent/mcp.json".into()),
        ..McpFlags::default()
    });
    let err = resolve_settings(&ConfigFile::default(), &env(&[]), &flags).expect_err("missing");
    assert_eq!(err.source_name(), "/nonexistent/mcp.json");
    assert!(err.problems()[0].starts_with("cannot read: "), "{err}");
}

#[test]
fn the_output_limit_reads_sizes_from_the_file_and_the_flag() {
    let servers = "[mcp.servers.a]\ncommand = \"a\"\n";
    let limit = |toml: &str, flag: Option<&str>| {
        let flags = with_tools(McpFlags {
            max_output: flag.map(|f| f.parse().expect("size")),
            ..McpFlags::default()
        });
        resolve_settings(&file(toml), &env(&[]), &flags)
            .map(|s| s.mcp.expect("servers").options.max_output_bytes)
    };
    assert_eq!(limit(servers, None).expect("default"), 16 * 1024 * 1024);
    let toml = format!("{servers}[mcp]\nmax_output_bytes = \"2MiB\"\n");
    assert_eq!(limit(&toml, None).expect("file"), 2 * 1024 * 1024);
    assert_eq!(limit(&toml, Some("1000")).expect("flag"), 1000);
    let err = limit(servers, Some("0")).expect_err("zero");
    assert_eq!(err.source_name(), "--mcp-max-output");
}
