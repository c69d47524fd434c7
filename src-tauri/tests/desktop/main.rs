//! The desktop shell's tests: its commands through Tauri's IPC on the mock runtime, the
//! generated TypeScript types, and the real app in a real window (over WebDriver).

mod app;
mod authoring;
mod commands;
mod driver;
mod first_hour;
mod generated_types;
mod network;
mod runs;
mod window;
