mod aimock;
mod durable;
mod http;
mod loadtest;
mod research;
mod run;
mod traces;
mod validate;
