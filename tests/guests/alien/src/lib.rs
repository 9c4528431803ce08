//! Test guest: exports `run` like a worldline agent, but imports
//! `acme:vault/secrets` and `acme:vault/audit`, which the host does not
//! provide. worldline must refuse it at load and name both imports.

wit_bindgen::generate!({
    path: "wit",
    world: "acme:vault/alien",
});

struct Alien;

impl Guest for Alien {
    fn run(task_json: String) -> Result<String, String> {
        acme::vault::audit::log(&task_json);
        acme::vault::secrets::get("db-password").ok_or_else(|| "no secret".to_string())
    }
}

export!(Alien);
