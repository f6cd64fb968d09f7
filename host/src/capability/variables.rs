//! `fermyon:spin/variables@2.0.0`: a component reads its own `[component.x.variables]`, rendered
//! from the application variables at start-up.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use anyhow::{Context, Result};
use wasmtime::component::{HasSelf, Linker};

use crate::config::template::{Template, validate_variable_name};
use crate::config::variables::AppVariables;

mod bindings {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "receta:host/variables",
        imports: { default: async | trappable },
    });
}

use bindings::fermyon::spin::variables;

/// The variables one component may read: its `[component.x.variables]`, rendered.
#[derive(Debug, Default)]
pub struct ComponentVariables {
    /// The component id, for error messages.
    pub component_id: String,
    values: HashMap<String, String>,
}

impl ComponentVariables {
    /// Renders a component's variable templates with the application variables.
    pub fn new(
        component_id: &str,
        templates: &BTreeMap<String, Template>,
        app: &AppVariables,
    ) -> Result<Self> {
        let mut values = HashMap::new();
        for (name, template) in templates {
            values.insert(
                name.clone(),
                template
                    .render(|name| app.get(name))
                    .with_context(|| format!("component {component_id:?} variable {name:?}"))?,
            );
        }
        Ok(Self {
            component_id: component_id.to_string(),
            values,
        })
    }

    /// Spin's `get`: an invalid name is `invalid-name`, one the component lacks is `undefined`.
    pub fn get(&self, name: &str) -> Result<String, variables::Error> {
        validate_variable_name(name).map_err(|e| variables::Error::InvalidName(e.to_string()))?;
        self.values.get(name).cloned().ok_or_else(|| {
            variables::Error::Undefined(format!("no variable for {:?}.{name:?}", self.component_id))
        })
    }
}

/// One store's view of its component's variables.
pub struct VariablesState(pub Arc<ComponentVariables>);

impl variables::Host for VariablesState {
    async fn get(&mut self, name: String) -> wasmtime::Result<Result<String, variables::Error>> {
        Ok(self.0.get(&name))
    }
}

/// Adds the interface to `linker`; `get` finds a store's variables.
pub fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    get: fn(&mut T) -> &mut VariablesState,
) -> Result<()> {
    variables::add_to_linker::<T, HasSelf<VariablesState>>(linker, get)
        .map_err(anyhow::Error::from)
        .context("cannot add fermyon:spin/variables to the linker")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn component_get() {
        let app = AppVariables::from_pairs(&[("a", "1")]);
        let templates = [("x".to_string(), Template::parse("{{ a }}!").unwrap())].into();
        let vars = ComponentVariables::new("c", &templates, &app).unwrap();
        assert_eq!(vars.get("x").unwrap(), "1!");
        assert!(matches!(vars.get("a"), Err(variables::Error::Undefined(_))));
        assert!(matches!(
            vars.get("A"),
            Err(variables::Error::InvalidName(_))
        ));
    }
}
