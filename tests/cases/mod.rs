mod aimock;
mod batch;
mod durable;
mod http;
mod research;
mod run;
mod traces;
mod validate;
