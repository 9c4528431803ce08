//! Host bindings of the service world (`wit/service/service.wit`,
//! `worldline:service/service`), generated from the WIT.

wasmtime::component::bindgen!({
    path: "../../wit/service",
    world: "worldline:service/service",
    // A call past its caps on reading and writing the world stops there
    // (frame.rs, `Limit`).
    imports: { "worldline:service/state": trappable },
});
