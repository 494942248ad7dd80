mod aimock;
mod durable;
mod http;
mod reflect;
mod research;
mod run;
mod traces;
mod validate;
