//! docker-compose.yml's NATS server fsyncs every JetStream write before acknowledging it
//! (`sync_interval: always`, Jepsen's NATS 2.12.1 finding): the compose file mounts its config
//! file and its command reads it, and the real `nats-server` started with that file and the
//! rest of the service's command says so in `/varz` (without it, it says otherwise).

use crate::cases::compose::{compose, strings};
use crate::support::nats::Nats;
use crate::support::tempdir;

#[test]
fn compose_runs_nats_with_jetstream_fsyncing_every_write_before_its_ack() {
    let Some(c) = compose() else { return };
    let nats = &c["services"]["nats"];
    let command = strings(&nats["command"]);
    let at = command
        .iter()
        .position(|a| a == "-c" || a == "--config")
        .unwrap_or_else(|| panic!("the server reads a config file: {command:?}"));
    let target = &command[at + 1];
    let mounted = nats["configs"]
        .as_array()
        .expect("configs mounted")
        .iter()
        .find(|m| m["target"] == target.as_str())
        .unwrap_or_else(|| panic!("{target} mounted: {nats}"));
    let source = mounted["source"].as_str().expect("source");
    let content = c["configs"][source]["content"]
        .as_str()
        .expect("inline config");

    // The real server with that file and the service's own JetStream flags (the store in a
    // temporary directory, the ports its own on loopback).
    let dir = tempdir();
    let file = dir.path().join("jetstream.conf");
    std::fs::write(&file, content).expect("write the config");
    let file = file.display().to_string();
    let Some(server) = Nats::start(&dir.path().join("js"), &["-c", &file]) else {
        return;
    };
    let js = &server.varz()["jetstream"]["config"];
    assert_eq!(js["sync_always"], true, "{js}");
    drop(server);
    // The same server without the file syncs on a timer (the check can tell the difference).
    let Some(plain) = Nats::start(&dir.path().join("js2"), &[]) else {
        return;
    };
    let js = &plain.varz()["jetstream"]["config"];
    assert_ne!(js["sync_always"], true, "{js}");
}
