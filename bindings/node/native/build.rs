//! Node-API's link arguments (symbols resolved by the node process at load time).
fn main() {
    napi_build::setup();
}
