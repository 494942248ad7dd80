mod run;
mod validate;
