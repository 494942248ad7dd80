//! A load test's `-H` headers reach the server, and only their names are ever shown: no
//! value of any header (whatever its name) and no part of an argument that is not a header
//! (a key pasted without its name) reaches the terminal.

use crate::support::{SimLlm, planwave};

#[test]
fn header_values_are_sent_but_only_their_names_are_shown() {
    let server = SimLlm::start(&[], &[]);
    let r = planwave(["loadtest", "--shape", "wide", "--json"])
        .opt("--tasks", "3")
        .opt("--llm-url", &server.base_url)
        .opt("-H", "X-Pass: HSECRET3")
        .opt("-H", "X-Tenant: TENANT-VALUE")
        .arg("-v")
        .run();
    r.expect_ok();
    assert!(
        r.stderr.contains("x-pass") && r.stderr.contains("x-tenant"),
        "the names are shown: {}",
        r.stderr
    );
    for value in ["HSECRET3", "TENANT-VALUE"] {
        assert!(
            !r.stderr.contains(value) && !r.stdout.contains(value),
            "{value} shown: {}",
            r.stderr
        );
    }
}

#[test]
fn an_argument_that_is_not_a_header_is_refused_without_being_echoed() {
    for bad in [
        "sk-live-NOT-A-HEADER-SECRET",
        "Bearer sk-live-NOT-A-HEADER-SECRET: x",
        "X-A: sk-live-NOT-A-HEADER-SECRET\u{1}",
    ] {
        let r = planwave(["loadtest", "--shape", "wide"])
            .opt("--tasks", "2")
            .opt("--llm-url", "http://127.0.0.1:9/v1")
            .opt("-H", bad)
            .run();
        r.expect_code(2);
        assert!(
            r.stderr.contains("--header"),
            "the flag is named: {}",
            r.stderr
        );
        assert!(
            !r.stderr.contains("NOT-A-HEADER-SECRET"),
            "{bad:?} echoed: {}",
            r.stderr
        );
    }
}
