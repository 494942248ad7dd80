mod aimock;
mod durable;
mod http;
mod research;
mod run;
mod traces;
mod validate;
