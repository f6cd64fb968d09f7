//! Component tests: each domain component alone, in-process, on the host's capabilities
//! (`receta_harness`); the gateway composed with its dependencies, without a socket. One module
//! per component; each test makes its own component and database (a copy of the migrated one).

mod auth;
mod catalog;
mod gateway;
mod helpers;
mod notifications;
mod patients;
mod pharmacies;
mod prescriptions;
