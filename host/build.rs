//! Generates the typed forwarders' table (`src/runtime/forward/app_wit.rs`) from the app's `wit/`:
//! one `(interface, function) => typed::<(params…), (result,)>` arm per function the gateway world
//! imports, with the Rust types wasmtime's `bindgen!` generates for them. A function added to `wit/`
//! gets its arm at the next build, with no edit to the host; a signature this script cannot name
//! (a resource, a stream…) gets none and is forwarded dynamically.

use std::fmt::Write as _;
use std::path::Path;

use wit_parser::{Handle, Resolve, Type, TypeDefKind, TypeOwner, WorldItem};

/// The world whose imports are forwarded typed, as `forward/app_wit.rs`'s `bindgen!` names it.
const WORLD: &str = "receta:erx/gateway";

fn main() {
    // Read when the script runs, not when it was compiled: a target directory shared between
    // checkouts must not parse another checkout's wit/.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let wit = Path::new(&manifest).join("../wit");
    println!("cargo:rerun-if-changed={}", wit.display());
    let mut resolve = Resolve::default();
    let (package, _) = resolve.push_dir(&wit).expect("the app's wit/ parses");
    let world = resolve
        .select_world(&[package], Some(WORLD))
        .expect("wit/ has the gateway world");
    let mut arms = String::new();
    for (key, item) in &resolve.worlds[world].imports {
        let WorldItem::Interface { id, .. } = item else {
            continue;
        };
        let interface = resolve.name_world_key(key);
        for (name, func) in &resolve.interfaces[*id].functions {
            let params: Option<Vec<String>> = func
                .params
                .iter()
                .map(|p| rust_type(&resolve, &p.ty))
                .collect();
            let result = match &func.result {
                Some(ty) => rust_type(&resolve, ty).map(|r| format!("({r},)")),
                None => Some("()".into()),
            };
            let (Some(params), Some(result)) = (params, result) else {
                continue;
            };
            let params: String = params.iter().map(|p| format!("{p},")).collect();
            writeln!(
                arms,
                "(\"{interface}\", \"{name}\") => Some(typed::<({params}), {result}>),"
            )
            .unwrap();
        }
    }
    let table = format!(
        "/// The typed forwarder of `interface#func`, if the host was built with its signature.\n\
         pub(super) fn forwarder(interface: &str, func: &str) -> Option<Forwarder> {{\n\
         match (interface, func) {{\n{arms}_ => None,\n}}\n}}\n"
    );
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("forwarders.rs");
    std::fs::write(out, table).expect("OUT_DIR is writable");
}

/// The Rust type `bindgen!` generates for `ty`; `None` for what this table does not forward typed.
fn rust_type(resolve: &Resolve, ty: &Type) -> Option<String> {
    Some(match ty {
        Type::Bool => "bool".into(),
        Type::U8 => "u8".into(),
        Type::U16 => "u16".into(),
        Type::U32 => "u32".into(),
        Type::U64 => "u64".into(),
        Type::S8 => "i8".into(),
        Type::S16 => "i16".into(),
        Type::S32 => "i32".into(),
        Type::S64 => "i64".into(),
        Type::F32 => "f32".into(),
        Type::F64 => "f64".into(),
        Type::Char => "char".into(),
        Type::String => "String".into(),
        Type::ErrorContext => return None,
        Type::Id(id) => {
            let def = &resolve.types[*id];
            if let (Some(name), TypeOwner::Interface(owner)) = (&def.name, def.owner) {
                let interface = &resolve.interfaces[owner];
                let package = &resolve.packages[interface.package?].name;
                return Some(format!(
                    "{}::{}::{}::{}",
                    snake(&package.namespace),
                    snake(&package.name),
                    snake(interface.name.as_deref()?),
                    camel(name)
                ));
            }
            match &def.kind {
                TypeDefKind::Option(t) => format!("Option<{}>", rust_type(resolve, t)?),
                TypeDefKind::List(t) => format!("Vec<{}>", rust_type(resolve, t)?),
                TypeDefKind::Result(r) => format!(
                    "Result<{}, {}>",
                    unit_or(resolve, r.ok.as_ref())?,
                    unit_or(resolve, r.err.as_ref())?
                ),
                TypeDefKind::Tuple(t) => {
                    let items: Option<Vec<String>> =
                        t.types.iter().map(|t| rust_type(resolve, t)).collect();
                    format!("({},)", items?.join(", "))
                }
                TypeDefKind::Type(t) => rust_type(resolve, t)?,
                // A resource of the host's (`spin:sqlite`'s `connection`, lent by the gateway).
                TypeDefKind::Handle(Handle::Borrow(t) | Handle::Own(t)) => format!(
                    "wasmtime::component::Resource<{}>",
                    rust_type(resolve, &Type::Id(*t))?
                ),
                _ => return None,
            }
        }
    })
}

fn unit_or(resolve: &Resolve, ty: Option<&Type>) -> Option<String> {
    ty.map_or(Some("()".into()), |t| rust_type(resolve, t))
}

fn snake(name: &str) -> String {
    name.replace('-', "_")
}

fn camel(name: &str) -> String {
    name.split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or(String::new(), |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}
