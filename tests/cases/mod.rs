mod aimock;
mod http;
mod research;
mod run;
mod traces;
mod validate;
