//! Solution catalogs (work in progress).

mod decode;
mod error;
pub mod hardware;
pub mod msgpack;
pub mod predicate;
pub mod problem;
pub mod stdsort;
pub mod yaml;

pub use error::{CatalogError, Location, Result};
