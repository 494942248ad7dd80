mod aimock;
mod http;
mod research;
mod run;
mod validate;
