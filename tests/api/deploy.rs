//! The Kubernetes manifests of `deploy/kubernetes/` (docs/deploying.md, "SpinKube"), checked against
//! the schemas they claim with tools independent of this project: the `SpinApp` against the
//! spin-operator's CRD (`tests/fixtures/spinkube/`, its `openAPIV3Schema`, with Python's
//! `jsonschema`, and no field the CRD does not declare, as `kubectl --validate=strict` would
//! refuse), every other object against Kubernetes' own schemas (`kubernetes-validate`, strict).
//! Then what ties them to the app: every variable the `SpinApp` sets is one of `spin.cloud.toml`'s,
//! every Secret key it reads exists, and the CronJob calls the jobs door with the jobs token.

use std::process::Command;

use serde_json::Value;

use crate::fixtures::python;
use crate::helpers::repo_root;

/// Kubernetes' schemas of this version (`kubernetes-validate`'s newest full set).
const KUBERNETES: &str = "1.33.0";

const CHECK: &str = r#"
import glob, json, sys, yaml, jsonschema, kubernetes_validate

root, version = sys.argv[1], sys.argv[2]
crd = json.load(open(f"{root}/tests/fixtures/spinkube/spinapp-v1alpha1.schema.json"))

def undeclared(doc, schema, path):
    """Fields the schema does not declare (a structural CRD prunes them silently)."""
    found = []
    if isinstance(doc, dict) and "properties" in schema:
        for key, value in doc.items():
            if key in schema["properties"]:
                found += undeclared(value, schema["properties"][key], f"{path}.{key}")
            elif "additionalProperties" not in schema:
                found.append(f"{path}.{key}")
    elif isinstance(doc, list) and "items" in schema:
        for i, item in enumerate(doc):
            found += undeclared(item, schema["items"], f"{path}[{i}]")
    return found

objects = []
for file in sorted(glob.glob(f"{root}/deploy/kubernetes/*.yaml")):
    for doc in yaml.safe_load_all(open(file)):
        if doc is None:
            continue
        name = f"{file.split('/')[-1]}: {doc['kind']}/{doc['metadata']['name']}"
        if doc["kind"] == "SpinApp":
            assert doc["apiVersion"] == "core.spinkube.dev/v1alpha1", name
            jsonschema.validate(doc, crd)
            extra = undeclared(doc, crd, "")
            assert not extra, f"{name}: fields the CRD does not declare: {extra}"
        else:
            kubernetes_validate.validate(doc, version, strict=True)
        objects.append(doc)
print(json.dumps(objects))
"#;

#[test]
fn the_kubernetes_manifests_match_their_schemas_and_the_app() {
    let out = Command::new(python())
        .args(["-c", CHECK])
        .arg(repo_root())
        .arg(KUBERNETES)
        .output()
        .expect("python with jsonschema and kubernetes-validate (cargo xtask test installs them)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let objects: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let kind = |k: &str| -> Vec<&Value> { objects.iter().filter(|o| o["kind"] == k).collect() };
    let app = kind("SpinApp")[0];
    let secrets = kind("Secret");
    let key_exists = |secret: &str, key: &str| {
        secrets
            .iter()
            .any(|s| s["metadata"]["name"] == secret && s["stringData"].get(key).is_some())
    };

    // Every variable is one the manifest declares, and every Secret key read exists.
    let manifest = std::fs::read_to_string(repo_root().join("spin.cloud.toml")).unwrap();
    for variable in app["spec"]["variables"].as_array().unwrap() {
        let name = variable["name"].as_str().unwrap();
        assert!(
            manifest.contains(&format!("\n{name} = {{ default")),
            "{name} is not a variable of spin.cloud.toml"
        );
        if let Some(from) = variable["valueFrom"].get("secretKeyRef") {
            let (secret, key) = (
                from["name"].as_str().unwrap(),
                from["key"].as_str().unwrap(),
            );
            assert!(key_exists(secret, key), "{secret}/{key} is missing");
        }
    }
    // The runtime config the operator mounts is a libSQL `default` database.
    let config_secret = app["spec"]["runtimeConfig"]["loadFromSecret"]
        .as_str()
        .unwrap();
    assert!(key_exists(config_secret, "runtime-config.toml"));
    let config = secrets
        .iter()
        .find(|s| s["metadata"]["name"] == config_secret)
        .unwrap()["stringData"]["runtime-config.toml"]
        .as_str()
        .unwrap();
    assert!(config.contains("[sqlite_database.default]") && config.contains("type = \"libsql\""));

    // The CronJob calls the jobs door of the app's Service with the jobs token.
    let cron = kind("CronJob")[0];
    let container = &cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0];
    let script = container["args"][0].as_str().unwrap();
    let app_name = app["metadata"]["name"].as_str().unwrap();
    assert!(script.contains(&format!("http://{app_name}/api/v2/jobs/run/")));
    assert!(script.contains("Authorization: Token $JOBS_TOKEN"));
    let token = &container["env"][0]["valueFrom"]["secretKeyRef"];
    assert_eq!(token["key"], "jobs_token");
    assert!(key_exists(token["name"].as_str().unwrap(), "jobs_token"));
}
