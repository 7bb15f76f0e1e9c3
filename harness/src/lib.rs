//! The lab's harness: runs every kernel on the best available device, validates each output
//! against a higher-precision reference, times it properly and writes the ablation tables.

pub mod breakdown;
pub mod calibrate;
pub mod cmd;
pub mod compare;
pub mod config;
pub mod console;
pub mod figures;
pub mod footprint;
pub mod inputs;
pub mod isolate;
pub mod library_rows;
pub mod memo;
pub mod output;
pub mod peers;
pub use kernel::reference;
pub mod registry;
pub mod report;
pub mod resources;
pub mod results;
pub mod run;
pub mod runs;
pub mod sass;
pub mod select;
pub mod sol;
pub mod timing;
pub mod tune;
pub mod user_kernel;
pub mod validate;
