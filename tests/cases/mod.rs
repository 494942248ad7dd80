mod aimock;
mod events;
mod http;
mod research;
mod run;
mod traces;
mod validate;
