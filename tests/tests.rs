//! Integration tests of the real `planwave` binary. One test binary (modules under `cases/`)
//! keeps link time down.

mod cases;
mod support;
