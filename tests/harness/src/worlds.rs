//! The app's component worlds (`wit/worlds.wit`), bound for the host side with Wasmtime's
//! `bindgen!`: a test calls a component's exports as typed Rust functions. One module per world,
//! each with its own copy of the shared types (`receta::common::types`).

use anyhow::Result;
use wasmtime::Store;
use wasmtime::component::InstancePre;

use receta_host::runtime::store::HostState;

/// A component world the harness can instantiate: where spin.toml names its component, and its
/// generated bindings.
pub trait World: Sized + Send + 'static {
    /// The gateway's `[component.gateway.dependencies]` key that plugs this component in.
    const DEPENDENCY: &'static str;
    /// The generated pre-instantiated form.
    type Pre: Clone + Send + Sync + 'static;
    /// Checks the component against the world and pre-instantiates it.
    fn pre(pre: InstancePre<HostState>) -> Result<Self::Pre>;
    /// A fresh instance in `store`.
    fn instantiate(
        pre: &Self::Pre,
        store: &mut Store<HostState>,
    ) -> impl Future<Output = wasmtime::Result<Self>> + Send;
}

/// A world whose exports take a lent `connection` names the host's `spin:sqlite` with `with`.
macro_rules! worlds {
    ($( $(#[$doc:meta])* $module:ident: $world:literal => $name:ident, $pre:ident, $dependency:literal
        $(, with { $($with:tt)* })?; )*) => {$(
        $(#[$doc])*
        pub mod $module {
            wasmtime::component::bindgen!({
                path: "../../wit",
                world: $world,
                exports: { default: async },
                $(with: { $($with)* },)?
            });
        }

        impl World for $module::$name {
            const DEPENDENCY: &'static str = $dependency;
            type Pre = $module::$pre<HostState>;

            fn pre(pre: InstancePre<HostState>) -> Result<Self::Pre> {
                Ok($module::$pre::new(pre)?)
            }

            async fn instantiate(
                pre: &Self::Pre,
                store: &mut Store<HostState>,
            ) -> wasmtime::Result<Self> {
                pre.instantiate_async(store).await
            }
        }
    )*};
}

worlds! {
    /// `auth-component`: tokens and password hashes.
    auth: "receta:erx/auth-component" => AuthComponent, AuthComponentPre, "receta:auth/auth@0.1.0", with { "spin:sqlite/sqlite": receta_host::capability::sqlite::bindings::sqlite };
    /// `catalog-component`: hospitals, medics, memberships, locations, campaigns.
    catalog: "receta:erx/catalog-component" => CatalogComponent, CatalogComponentPre,
        "receta:catalog@0.1.0", with { "spin:sqlite/sqlite": receta_host::capability::sqlite::bindings::sqlite };
    /// `patients-component`: a medic's patients.
    patients: "receta:erx/patients-component" => PatientsComponent, PatientsComponentPre,
        "receta:patients/patients@0.1.0", with { "spin:sqlite/sqlite": receta_host::capability::sqlite::bindings::sqlite };
    /// `prescriptions-component`: issue, lifecycle, seal, drug catalog, outbox rows.
    prescriptions: "receta:erx/prescriptions-component" => PrescriptionsComponent,
        PrescriptionsComponentPre, "receta:prescriptions/prescriptions@0.1.0", with { "spin:sqlite/sqlite": receta_host::capability::sqlite::bindings::sqlite };
    /// `pharmacies-component`: the pharmacy register and the call log.
    pharmacies: "receta:erx/pharmacies-component" => PharmaciesComponent,
        PharmaciesComponentPre, "receta:pharmacies/pharmacies@0.1.0", with { "spin:sqlite/sqlite": receta_host::capability::sqlite::bindings::sqlite };
    /// `notifications-component`: webhook subscriptions and deliveries.
    notifications: "receta:erx/notifications-component" => NotificationsComponent,
        NotificationsComponentPre, "receta:notifications/notifications@0.1.0", with { "spin:sqlite/sqlite": receta_host::capability::sqlite::bindings::sqlite };
}
