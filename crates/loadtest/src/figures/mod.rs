//! What a load test measured, as data: one run's figures (`load_report`), the serving
//! metrics of its requests (`serving`), the percentiles they are made of, a session
//! workload's figures per turn (`turns`), a sweep's knee (`knee`) and a rate sweep's
//! saturation check (`saturation`). Drawing them is `planwave-loadtest-report`'s job.

pub(crate) mod cache;
pub(crate) mod knee;
pub(crate) mod load_report;
pub(crate) mod percentiles;
pub(crate) mod saturation;
pub(crate) mod serving;
pub(crate) mod turns;
