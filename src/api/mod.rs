//! Flotilla custom resources.
