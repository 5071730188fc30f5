//! How an Application's destination is reached: which cluster it names ([`destination`]), the
//! connection settings of a cluster Secret ([`connection`]) and one client per cluster
//! ([`clients`]).

pub mod clients;
pub mod connection;
pub mod destination;
