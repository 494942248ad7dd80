mod aimock;
mod durable;
mod http;
mod mcp;
mod research;
mod run;
mod traces;
mod validate;
