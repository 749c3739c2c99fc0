//! Simulator speed measurement.
