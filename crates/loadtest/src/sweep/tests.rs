//! The sweep driver on the in-process simulator: real engine runs, tiny workloads.

use super::*;
use crate::traffic::TrafficError;

struct Seen(std::sync::Mutex<Vec<String>>);

impl SweepWatch for Seen {
    fn run_starts(&self, run: &RunStart<'_>) {
        if let Ok(mut seen) = self.0.lock() {
            seen.push(format!(
                "{} {} {:?}",
                run.tasks,
                run.schedule.as_str(),
                run.label
            ));
        }
    }
}

fn options(traffic: Traffic) -> SweepOptions<String> {
    SweepOptions {
        plan: PlanChoice::Generated {
            shape: Shape::Chain,
            tasks: 4,
            fan_in: 1,
            width: None,
        },
        seed: 7,
        latency: Some(LatencyModel::Fixed { ms: 1.0 }),
        latency_file: None,
        save_latencies: None,
        endpoint: Endpoint::Simulator,
        schedules: vec![Schedule::Dataflow],
        retries: 0,
        journal: None,
        timeline: None,
        pictures: false,
        traffic,
        integrator: false,
        prompts: None,
        arrivals: None,
        scrape_metrics: None,
        shaping: None,
        synthetic: None,
        salt: 0,
    }
}

#[tokio::test]
async fn a_concurrency_sweep_runs_every_point_and_schedule_and_names_the_knee() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = options(Traffic {
        requests: Some(6),
        concurrency: vec![1, 3],
        ..Traffic::default()
    });
    o.schedules = vec![Schedule::Dataflow, Schedule::Dataflow, Schedule::Waves];
    o.save_latencies = Some(dir.path().join("latencies.json"));
    o.timeline = Some(dir.path().join("timeline.jsonl"));
    let seen = Seen(Default::default());
    let out = run_sweep(o, &seen, CancellationToken::new())
        .await
        .expect("runs");
    assert_eq!(
        *seen.0.lock().expect("lock"),
        [
            "6 dataflow Some(\"concurrency=1\")",
            "6 waves Some(\"concurrency=1\")",
            "6 dataflow Some(\"concurrency=3\")",
            "6 waves Some(\"concurrency=3\")",
        ],
        "repeated schedules run once"
    );
    assert_eq!(out.status(), SweepStatus::Completed);
    assert!(
        out.runs.iter().all(|r| r.serving.is_some()),
        "a sweep measures serving"
    );
    let summary = out.summary().expect("a sweep has a knee");
    assert_eq!(summary.points.len(), 4);
    let w = out.workload.as_ref().expect("the workload");
    assert_eq!(
        (w.source.as_str(), w.model.as_str(), w.latency_by_server),
        ("6 independent requests", "in-process simulator", false)
    );
    let saved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("latencies.json")).expect("saved"),
    )
    .expect("json");
    let saved = saved.as_object().expect("a map of task id to ms");
    assert_eq!(saved.len(), 6, "the last point's plan: {saved:?}");
    assert!(
        saved
            .values()
            .all(|v| v.as_f64().is_some_and(|ms| (ms - 1.0).abs() < 1e-6))
    );
    let timeline = std::fs::read_to_string(dir.path().join("timeline.jsonl")).expect("timeline");
    assert_eq!(
        timeline.lines().count(),
        4 * (1 + 6),
        "a header and a line per task, per run"
    );
}

/// A run's total as its live view was given it, and the probe the view reads.
type Shown = (usize, Arc<Probe>);

/// What each run handed to its live view.
#[derive(Default)]
struct Progress(Arc<std::sync::Mutex<Vec<Shown>>>);

impl SweepWatch for Progress {
    fn progress(&self, calls: usize) -> Option<Box<dyn FnOnce(Arc<Probe>) + Send>> {
        let seen = self.0.clone();
        Some(Box::new(move |probe| {
            if let Ok(mut seen) = seen.lock() {
                seen.push((calls, probe));
            }
        }))
    }
}

#[tokio::test]
async fn the_live_view_s_total_is_every_call_the_run_makes_the_summary_included() {
    let watch = Progress::default();
    run_sweep(
        options(Traffic::default()),
        &watch,
        CancellationToken::new(),
    )
    .await
    .expect("runs");
    let seen = watch.0.lock().expect("lock");
    let [(total, probe)] = seen.as_slice() else {
        panic!("one run, one view: {}", seen.len());
    };
    // Four tasks and the summary, which the simulator answers through the probe.
    assert_eq!(*total, 5);
    let end = probe.live_snapshot();
    assert_eq!((end.done, end.in_flight), (5, 0), "{end:?}");
}

#[tokio::test]
async fn a_latency_file_for_another_plan_is_refused() {
    let mut o = options(Traffic::default());
    o.latency_file = Some(LatencyFile {
        path: "other.json".into(),
        latencies: [("99".to_owned(), Duration::from_millis(5))].into(),
    });
    let err = run_sweep(o, &Seen(Default::default()), CancellationToken::new())
        .await
        .expect_err("unknown task");
    assert!(
        matches!(&err, SweepError::LatencyFileIds { problems, .. } if problems == &["task 99 is not in the plan"]),
        "{err:?}"
    );
}

#[tokio::test]
async fn an_endpoint_decides_latency_and_its_connect_error_comes_back_untouched() {
    let http = |o: &mut SweepOptions<String>| {
        o.endpoint = Endpoint::Http {
            url: "http://127.0.0.1:9/v1".into(),
            connect: Box::new(|| Err("no client".to_owned())),
        };
    };
    let mut o = options(Traffic::default());
    http(&mut o);
    let err = run_sweep(o, &Seen(Default::default()), CancellationToken::new()).await;
    assert!(matches!(err, Err(SweepError::LatencyWithEndpoint)));
    let mut o = options(Traffic::default());
    http(&mut o);
    o.latency = None;
    let err = run_sweep(o, &Seen(Default::default()), CancellationToken::new()).await;
    assert!(matches!(err, Err(SweepError::Connect(e)) if e == "no client"));
}

#[tokio::test]
async fn a_cancelled_sweep_stops_after_the_run_in_progress() {
    let cancel = CancellationToken::new();
    cancel.cancel();
    let o = options(Traffic {
        concurrency: vec![1, 2, 4],
        ..Traffic::default()
    });
    let out = run_sweep(o, &Seen(Default::default()), cancel)
        .await
        .expect("stops cleanly");
    assert_eq!(out.runs.len(), 1, "no point after the cancelled one");
    assert!(
        out.workload.is_some(),
        "the stopped run is reported with its workload"
    );
    assert_eq!(out.status(), SweepStatus::Interrupted);
}

#[tokio::test]
async fn contradictory_traffic_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = options(Traffic {
        rate: vec![0.0],
        requests: Some(1),
        ..Traffic::default()
    });
    o.journal = Some(dir.path().join("journal.jsonl"));
    let err = run_sweep(o, &Seen(Default::default()), CancellationToken::new()).await;
    assert!(matches!(
        err,
        Err(SweepError::Traffic(TrafficError::NotPositiveRate(_)))
    ));
    assert!(
        !dir.path().join("journal.jsonl").exists(),
        "no journal opened"
    );
}

#[tokio::test]
async fn a_rate_sweep_stops_rising_at_the_first_rate_it_cannot_send() {
    // One call at a time, 20 ms each: at most 50 requests/s go out, whatever is asked.
    let traffic = |stop| Traffic {
        requests: Some(20),
        rate: vec![20.0, 100_000.0, 200_000.0],
        concurrency: vec![1],
        burstiness: 100.0,
        saturation: crate::SaturationRule {
            tolerance: 0.5,
            stop,
        },
        ..Traffic::default()
    };
    let mut o = options(traffic(true));
    o.latency = Some(LatencyModel::Fixed { ms: 20.0 });
    let seen = Seen(Default::default());
    let out = run_sweep(o, &seen, CancellationToken::new())
        .await
        .expect("runs");
    assert_eq!(out.runs.len(), 2, "{:?}", seen.0.lock().expect("lock"));
    let s = out.saturation.as_ref().expect("a rate sweep is checked");
    assert_eq!(s.point.as_deref(), Some("rate=100000"));
    assert_eq!(s.skipped, ["rate=200000"]);
    assert!(!s.checked[0].saturated(), "{s:?}");
    assert!(
        s.checked[1]
            .reasons
            .contains(&crate::SaturationReason::SentBelowOffered),
        "{s:?}"
    );
    assert_eq!(
        out.summary()
            .and_then(|k| k.stopped_at_saturation)
            .as_deref(),
        Some("rate=100000"),
        "the knee is not said to be further out"
    );

    // Told to go on, it runs every rate and still names the first saturated one.
    let mut o = options(traffic(false));
    o.latency = Some(LatencyModel::Fixed { ms: 20.0 });
    let out = run_sweep(o, &Seen(Default::default()), CancellationToken::new())
        .await
        .expect("runs");
    let s = out.saturation.as_ref().expect("checked");
    assert_eq!(
        (out.runs.len(), s.point.as_deref(), s.skipped.len()),
        (3, Some("rate=100000"), 0)
    );
}
