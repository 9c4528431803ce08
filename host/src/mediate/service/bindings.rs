//! Host bindings of the service world (`wit/service/service.wit`,
//! `worldline:service/service`), generated from the WIT.

wasmtime::component::bindgen!({
    path: "../wit/service",
    world: "worldline:service/service",
});
