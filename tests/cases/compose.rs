//! docker-compose.yml and the Dockerfile, checked as far as possible without a Docker engine:
//! the YAML parsed by PyYAML (services, ports, environment), the Dockerfile's stages, and the
//! planwave service's own command and environment run with the real binary against a real
//! OTLP receiver standing in for Jaeger. Not checked here: that the images pull and build,
//! and that Jaeger's UI shows the trace.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

use crate::support::otlp::{OtlpReceiver, attr};
use crate::support::{peer, planwave, repo_file, tempdir};

pub(crate) fn compose() -> Option<Value> {
    let python = peer("py/bin/python")?;
    let out = Command::new(python)
        .arg(repo_file("tests/peers/yaml_to_json.py"))
        .arg(repo_file("docker-compose.yml"))
        .output()
        .expect("run PyYAML");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("compose as JSON"))
}

pub(crate) fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|s| {
            s.as_str()
                .unwrap_or_else(|| panic!("not a string: {s}"))
                .to_owned()
        })
        .collect()
}

#[test]
fn compose_runs_jaeger_v2_with_otlp_and_ui_on_loopback_and_planwave_exporting_to_it() {
    let Some(c) = compose() else { return };
    let services = c["services"].as_object().expect("services");
    assert_eq!(
        services.keys().collect::<Vec<_>>(),
        [
            "jaeger",
            "nats",
            "planwave",
            "prometheus",
            "server",
            "worker"
        ]
    );

    let jaeger = &c["services"]["jaeger"];
    let image = jaeger["image"].as_str().expect("image");
    let tag = image
        .strip_prefix("jaegertracing/jaeger:")
        .expect("the Jaeger v2 image");
    assert!(tag.starts_with("2."), "a pinned v2 tag: {image}");
    let ports = strings(&jaeger["ports"]);
    for p in ["16686", "4317", "4318"] {
        assert!(
            ports.contains(&format!("127.0.0.1:{p}:{p}")),
            "port {p} published on loopback: {ports:?}"
        );
    }

    let pw = &c["services"]["planwave"];
    assert_eq!(pw["build"]["dockerfile"], "Dockerfile");
    assert_eq!(strings(&pw["depends_on"]), ["jaeger"]);
    let env: BTreeMap<String, String> = pw["environment"]
        .as_object()
        .expect("environment map")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("string").to_owned()))
        .collect();
    assert_eq!(env["OTEL_EXPORTER_OTLP_ENDPOINT"], "http://jaeger:4318");
    assert_eq!(env["OTEL_EXPORTER_OTLP_PROTOCOL"], "http/protobuf");
    assert_eq!(env["OTEL_SERVICE_NAME"], "planwave");
    assert_eq!(strings(&pw["volumes"]), ["runs:/runs"]);
    assert!(c["volumes"].get("runs").is_some());
}

#[test]
fn dockerfile_builds_in_one_stage_and_runs_the_binary_from_a_slim_one() {
    let text = std::fs::read_to_string(repo_file("Dockerfile")).expect("Dockerfile");
    let froms: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(froms.len(), 2, "{froms:?}");
    assert!(froms[0].starts_with("FROM rust:") && froms[0].ends_with(" AS build"));
    assert!(text.contains("cargo build --release --locked --bin planwave"));
    assert!(
        text.contains("COPY --from=build /src/target/release/planwave /usr/local/bin/planwave")
    );
    assert!(text.contains("ENTRYPOINT [\"planwave\"]"));
    assert!(text.contains("USER planwave"), "not root at run time");
    // The toolchain image must be new enough for the workspace.
    let want: Vec<u32> = crate::support::read_toml_value("Cargo.toml", "rust-version")
        .split('.')
        .map(|n| n.parse().expect("number"))
        .collect();
    let have: Vec<u32> = froms[0]["FROM rust:".len()..]
        .split(['-', ' '])
        .next()
        .expect("version")
        .split('.')
        .map(|n| n.parse().expect("number"))
        .collect();
    assert!(
        have >= want,
        "rust image {have:?} older than rust-version {want:?}"
    );
    let ignore = std::fs::read_to_string(repo_file(".dockerignore")).expect(".dockerignore");
    assert!(
        ignore.lines().any(|l| l == "target"),
        "the build context leaves target/ out"
    );
}

#[test]
fn the_planwave_service_command_and_environment_export_a_trace() {
    let Some(c) = compose() else { return };
    let Some(receiver) = OtlpReceiver::start(false) else {
        return;
    };
    let dir = tempdir();
    let out = dir.path().join("tesla");
    let pw = &c["services"]["planwave"];
    // The service's own arguments, with the run directory moved out of /runs and the
    // simulated latency dropped (the timeline's shape is not under test).
    let mut args = strings(&pw["command"]);
    let at = args
        .iter()
        .position(|a| a == "/runs/tesla")
        .expect("--out /runs/tesla");
    args[at] = out.to_str().expect("path").to_owned();
    let at = args
        .iter()
        .position(|a| a == "--sim-latency-ms")
        .expect("latency flag");
    args[at + 1] = "0".into();
    let mut env: Vec<(String, String)> = pw["environment"]
        .as_object()
        .expect("environment")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("string").to_owned()))
        .collect();
    for (k, v) in &mut env {
        if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
            // jaeger:4318 is the compose network's name for the collector; here it is ours.
            *v = receiver.http_url.clone();
        }
    }
    let res = env
        .iter()
        .fold(planwave(&args), |p, (k, v)| p.env(k, v))
        .run();
    res.expect_ok();
    assert!(out.join("report.md").exists());
    let spans = receiver.spans();
    let roots = spans.roots();
    assert_eq!(roots.len(), 1);
    assert_eq!(roots[0]["resource"]["service.name"], "planwave");
    assert_eq!(attr(roots[0], "planwave.command"), "research");
    assert!(!spans.tasks().is_empty());
}

#[test]
fn compose_runs_a_jetstream_server_and_scalable_workers_whose_command_drains_a_batch() {
    let Some(c) = compose() else { return };
    let nats = &c["services"]["nats"];
    let image = nats["image"].as_str().expect("image");
    assert!(
        image.starts_with("nats:2."),
        "a pinned NATS 2.x image: {image}"
    );
    let command = strings(&nats["command"]);
    assert!(
        command.windows(2).any(|w| w == ["-sd", "/data"]),
        "{command:?}"
    );
    assert!(
        command.contains(&"-js".to_owned()),
        "JetStream on: {command:?}"
    );
    assert_eq!(strings(&nats["ports"]), ["127.0.0.1:4222:4222"]);
    assert_eq!(strings(&nats["volumes"]), ["nats-data:/data"]);
    assert!(c["volumes"].get("nats-data").is_some());

    let worker = &c["services"]["worker"];
    // `--scale worker=3` needs no fixed name or host port.
    assert!(worker.get("container_name").is_none() && worker.get("ports").is_none());
    assert_eq!(strings(&worker["depends_on"]), ["nats"]);
    let mut args = strings(&worker["command"]);
    assert_eq!(args[..3], ["worker", "--nats", "nats://nats:4222"]);

    // The worker's own command against a real server (nats:4222 is the compose network's
    // name for it; here it is ours), latency dropped: it drains a submitted job.
    let dir = tempdir();
    let Some(server) = crate::support::nats::Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    args[2] = server.url();
    let at = args
        .iter()
        .position(|a| a == "--sim-latency-ms")
        .expect("latency");
    args[at + 1] = "0".into();
    // Its metrics address, which the compose network keeps private, on loopback here.
    let at = args
        .iter()
        .position(|a| a == "--metrics-addr")
        .expect("--metrics-addr");
    assert_eq!(args[at + 1], "0.0.0.0:9464");
    args[at + 1] = "127.0.0.1:0".into();
    let jobs = dir.path().join("jobs.jsonl");
    let plan = crate::support::plan("compose", &[("1", "one", &[]), ("2", "two", &["1"])]);
    std::fs::write(
        &jobs,
        format!("{}\n", serde_json::json!({"id": "c1", "plan": plan})),
    )
    .expect("jobs");
    planwave(["batch"])
        .arg(&jobs)
        .opt("--nats", server.url())
        .opt("--batch", "compose")
        .run()
        .expect_ok();
    let mut worker = crate::support::nats::WorkerProc(Some(
        planwave(&args)
            .opt("--cache", dir.path().join("cache"))
            .spawn(),
    ));
    worker.running().wait_for("metrics on http://", 1);
    worker.running().wait_for("job c1 finished: completed", 1);
    let (code, _) = worker.terminate();
    assert_eq!(code, 0);
    let status = planwave([
        "batch",
        "status",
        "compose",
        "--nats",
        &server.url(),
        "--json",
    ])
    .run();
    let s: Value = serde_json::from_str(&status.stdout).expect("status JSON");
    assert_eq!(s["counts"]["completed"], 1, "{s}");
}

/// The Prometheus service scrapes the server (with the server's own token) and every
/// worker replica on the port their command gives.
#[test]
fn compose_runs_prometheus_scraping_the_server_and_every_worker() {
    let Some(c) = compose() else { return };
    let prom = &c["services"]["prometheus"];
    let image = prom["image"].as_str().expect("image");
    assert!(image.starts_with("prom/prometheus:v2."), "pinned: {image}");
    assert_eq!(strings(&prom["ports"]), ["127.0.0.1:9090:9090"]);
    assert_eq!(
        prom["configs"][0]["target"],
        "/etc/prometheus/prometheus.yml"
    );
    let source = prom["configs"][0]["source"].as_str().expect("source");
    let text = c["configs"][source]["content"]
        .as_str()
        .expect("inline config");
    let python = peer("py/bin/python").expect("checked by compose()");
    let dir = tempdir();
    let file = dir.path().join("prometheus.yml");
    std::fs::write(&file, text).expect("write");
    let out = Command::new(python)
        .arg(repo_file("tests/peers/yaml_to_json.py"))
        .arg(&file)
        .output()
        .expect("run PyYAML");
    let config: Value = serde_json::from_slice(&out.stdout).expect("config as JSON");
    let jobs = config["scrape_configs"].as_array().expect("scrape_configs");
    let serve = jobs
        .iter()
        .find(|j| j["job_name"] == "serve")
        .expect("serve job");
    assert_eq!(serve["static_configs"][0]["targets"][0], "server:8080");
    let server = &c["services"]["server"];
    let token = server["environment"]["PLANWAVE_SERVE_TOKEN"]
        .as_str()
        .expect("token");
    assert_eq!(serve["authorization"]["credentials"], token);
    assert!(strings(&server["command"]).contains(&"0.0.0.0:8080".to_owned()));
    let worker = jobs
        .iter()
        .find(|j| j["job_name"] == "worker")
        .expect("worker job");
    let sd = &worker["dns_sd_configs"][0];
    assert_eq!(strings(&sd["names"]), ["worker"]);
    let args = strings(&c["services"]["worker"]["command"]);
    let at = args
        .iter()
        .position(|a| a == "--metrics-addr")
        .expect("flag");
    assert_eq!(format!("0.0.0.0:{}", sd["port"]), args[at + 1]);
}
