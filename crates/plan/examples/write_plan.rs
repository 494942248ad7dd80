//! Writes a generated plan as JSON on stdout, for timing `planwave validate` on large plans:
//! `cargo run --release -p planwave-plan --example write_plan -- layered 1000000 1000 3 > plan.json`
//!
//! Arguments: SHAPE (wide, chain, layered, random), TASKS, then for layered WIDTH and FAN_IN,
//! for random FAN_IN; the seed is 0.

use std::io::{BufWriter, Write};

use planwave_plan::generate;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, default: usize| {
        args.get(i)
            .map_or(default, |s| s.parse().expect("a whole number"))
    };
    let tasks = num(1, 1000);
    let plan = match args.first().map(String::as_str) {
        Some("wide") => generate::wide(tasks),
        Some("chain") => generate::chain(tasks),
        Some("layered") => generate::layered(tasks, num(2, 1000), num(3, 3), 0),
        Some("random") => generate::random(tasks, num(2, 3), 0),
        _ => {
            eprintln!("usage: write_plan wide|chain|layered|random TASKS [WIDTH] [FAN_IN]");
            std::process::exit(2);
        }
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    serde_json::to_writer(&mut out, &plan).expect("write the plan");
    out.write_all(b"\n").expect("write the plan");
}
