//! Shared benchmark support.

pub mod cpu_time;
