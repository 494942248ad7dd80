mod aimock;
mod events;
mod http;
mod research;
mod run;
mod show;
mod traces;
mod validate;
