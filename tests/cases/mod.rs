mod aimock;
mod http;
mod loadtest;
mod research;
mod run;
mod validate;
