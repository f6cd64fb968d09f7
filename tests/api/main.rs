//! One black-box test binary: every module starts the real `receta` host with the real components
//! (see `helpers::spawn_app`) and talks to it over HTTP on an ephemeral port.

mod contract;
mod fixtures;
mod helpers;
mod paths;
mod scheduler;
mod sqld;

mod abuse;
mod access_log;
mod availability;
mod campaigns;
mod channels;
mod claims;
mod consent;
mod constancias;
mod contact;
mod counter;
mod deploy;
mod efirma;
mod efirma_signing;
mod fhir;
mod handover;
mod hospitals;
mod integrator;
mod jobs;
mod landing;
mod landing_browser;
mod locations;
mod medics;
mod memberships;
mod mexican_rules;
mod migrations;
mod nodes;
mod notifications;
mod patients;
mod pharmacies;
mod pharmacy_status;
mod prescriptions;
mod receipts;
mod replicas;
mod reuse;
mod scale_out;
mod skeleton;
mod verification;
mod webhooks;
