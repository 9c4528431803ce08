//! `wasi:sockets`: a network handle exists and grants nothing.
//!
//! - virtual: the instance network handle;
//! - recorded: every call, denied ones with their family or name;
//! - denied: creating a TCP or UDP socket and resolving a name (the guest
//!   sees `access-denied`), so no socket or lookup stream can ever exist;
//!   their methods are unreachable and trap if ever called.

use super::super::RunState;
use super::super::bindings::wasi::sockets::ip_name_lookup::IpAddress;
use super::super::bindings::wasi::sockets::network::{IpAddressFamily, IpSocketAddress};
use super::super::bindings::wasi::sockets::tcp::ShutdownType;
use super::super::bindings::wasi::sockets::udp;
use super::super::bindings::{
    InputStream, IoError, Network, Never, OutputStream, Pollable, SocketError, wasi,
};
use super::never;
use serde_json::{Value, json};
use wasmtime::component::Resource;

fn family_name(family: wasi::sockets::network::IpAddressFamily) -> &'static str {
    match family {
        wasi::sockets::network::IpAddressFamily::Ipv4 => "ipv4",
        wasi::sockets::network::IpAddressFamily::Ipv6 => "ipv6",
    }
}

impl wasi::sockets::network::Host for RunState {
    fn convert_error_code(
        &mut self,
        err: SocketError,
    ) -> wasmtime::Result<wasi::sockets::network::ErrorCode> {
        match err {
            SocketError::Code(c) => Ok(c),
            SocketError::Trap(e) => Err(e),
        }
    }

    fn network_error_code(
        &mut self,
        err: Resource<IoError>,
    ) -> wasmtime::Result<Option<wasi::sockets::network::ErrorCode>> {
        self.call_fixed(
            "wasi:sockets/network.network-error-code",
            json!({"handle": err.rep()}),
            Value::Null,
        )?;
        Ok(None)
    }
}

impl wasi::sockets::network::HostNetwork for RunState {
    fn drop(&mut self, n: Resource<Network>) -> wasmtime::Result<()> {
        self.call_fixed("wasi:sockets/network.network.drop", json!({}), Value::Null)?;
        self.table.delete(n)?;
        Ok(())
    }
}

impl wasi::sockets::instance_network::Host for RunState {
    fn instance_network(&mut self) -> wasmtime::Result<Resource<Network>> {
        self.call_fixed(
            "wasi:sockets/instance-network.instance-network",
            json!({}),
            json!("network"),
        )?;
        Ok(self.table.push(Network)?)
    }
}

impl wasi::sockets::tcp_create_socket::Host for RunState {
    fn create_tcp_socket(
        &mut self,
        family: wasi::sockets::network::IpAddressFamily,
    ) -> Result<Resource<Never>, SocketError> {
        let family = family_name(family);
        self.denied(
            "wasi:sockets/tcp-create-socket.create-tcp-socket",
            json!({"family": family}),
            "network access is not part of a worldline world",
        )?;
        Err(SocketError::Code(
            wasi::sockets::network::ErrorCode::AccessDenied,
        ))
    }
}

impl wasi::sockets::udp_create_socket::Host for RunState {
    fn create_udp_socket(
        &mut self,
        family: wasi::sockets::network::IpAddressFamily,
    ) -> Result<Resource<Never>, SocketError> {
        let family = family_name(family);
        self.denied(
            "wasi:sockets/udp-create-socket.create-udp-socket",
            json!({"family": family}),
            "network access is not part of a worldline world",
        )?;
        Err(SocketError::Code(
            wasi::sockets::network::ErrorCode::AccessDenied,
        ))
    }
}

impl wasi::sockets::ip_name_lookup::Host for RunState {
    fn resolve_addresses(
        &mut self,
        _network: Resource<Network>,
        name: String,
    ) -> Result<Resource<Never>, SocketError> {
        self.denied(
            "wasi:sockets/ip-name-lookup.resolve-addresses",
            json!({"name": name}),
            "name lookup is not part of a worldline world",
        )?;
        Err(SocketError::Code(
            wasi::sockets::network::ErrorCode::AccessDenied,
        ))
    }
}

impl wasi::sockets::tcp::Host for RunState {}
impl wasi::sockets::udp::Host for RunState {}

impl wasi::sockets::tcp::HostTcpSocket for RunState {
    fn start_bind(
        &mut self,
        _this: Resource<Never>,
        _network: Resource<Network>,
        _local_address: IpSocketAddress,
    ) -> Result<(), SocketError> {
        never()
    }
    fn finish_bind(&mut self, _this: Resource<Never>) -> Result<(), SocketError> {
        never()
    }
    fn start_connect(
        &mut self,
        _this: Resource<Never>,
        _network: Resource<Network>,
        _remote_address: IpSocketAddress,
    ) -> Result<(), SocketError> {
        never()
    }
    fn finish_connect(
        &mut self,
        _this: Resource<Never>,
    ) -> Result<(Resource<InputStream>, Resource<OutputStream>), SocketError> {
        never()
    }
    fn start_listen(&mut self, _this: Resource<Never>) -> Result<(), SocketError> {
        never()
    }
    fn finish_listen(&mut self, _this: Resource<Never>) -> Result<(), SocketError> {
        never()
    }
    fn accept(
        &mut self,
        _this: Resource<Never>,
    ) -> Result<
        (
            Resource<Never>,
            Resource<InputStream>,
            Resource<OutputStream>,
        ),
        SocketError,
    > {
        never()
    }
    fn local_address(&mut self, _this: Resource<Never>) -> Result<IpSocketAddress, SocketError> {
        never()
    }
    fn remote_address(&mut self, _this: Resource<Never>) -> Result<IpSocketAddress, SocketError> {
        never()
    }
    fn is_listening(&mut self, _this: Resource<Never>) -> Result<bool, wasmtime::Error> {
        never()
    }
    fn address_family(
        &mut self,
        _this: Resource<Never>,
    ) -> Result<IpAddressFamily, wasmtime::Error> {
        never()
    }
    fn set_listen_backlog_size(
        &mut self,
        _this: Resource<Never>,
        _value: u64,
    ) -> Result<(), SocketError> {
        never()
    }
    fn keep_alive_enabled(&mut self, _this: Resource<Never>) -> Result<bool, SocketError> {
        never()
    }
    fn set_keep_alive_enabled(
        &mut self,
        _this: Resource<Never>,
        _value: bool,
    ) -> Result<(), SocketError> {
        never()
    }
    fn keep_alive_idle_time(&mut self, _this: Resource<Never>) -> Result<u64, SocketError> {
        never()
    }
    fn set_keep_alive_idle_time(
        &mut self,
        _this: Resource<Never>,
        _value: u64,
    ) -> Result<(), SocketError> {
        never()
    }
    fn keep_alive_interval(&mut self, _this: Resource<Never>) -> Result<u64, SocketError> {
        never()
    }
    fn set_keep_alive_interval(
        &mut self,
        _this: Resource<Never>,
        _value: u64,
    ) -> Result<(), SocketError> {
        never()
    }
    fn keep_alive_count(&mut self, _this: Resource<Never>) -> Result<u32, SocketError> {
        never()
    }
    fn set_keep_alive_count(
        &mut self,
        _this: Resource<Never>,
        _value: u32,
    ) -> Result<(), SocketError> {
        never()
    }
    fn hop_limit(&mut self, _this: Resource<Never>) -> Result<u8, SocketError> {
        never()
    }
    fn set_hop_limit(&mut self, _this: Resource<Never>, _value: u8) -> Result<(), SocketError> {
        never()
    }
    fn receive_buffer_size(&mut self, _this: Resource<Never>) -> Result<u64, SocketError> {
        never()
    }
    fn set_receive_buffer_size(
        &mut self,
        _this: Resource<Never>,
        _value: u64,
    ) -> Result<(), SocketError> {
        never()
    }
    fn send_buffer_size(&mut self, _this: Resource<Never>) -> Result<u64, SocketError> {
        never()
    }
    fn set_send_buffer_size(
        &mut self,
        _this: Resource<Never>,
        _value: u64,
    ) -> Result<(), SocketError> {
        never()
    }
    fn subscribe(&mut self, _this: Resource<Never>) -> wasmtime::Result<Resource<Pollable>> {
        never()
    }
    fn shutdown(
        &mut self,
        _this: Resource<Never>,
        _shutdown_type: ShutdownType,
    ) -> Result<(), SocketError> {
        never()
    }
    fn drop(&mut self, _this: Resource<Never>) -> Result<(), wasmtime::Error> {
        never()
    }
}

impl wasi::sockets::udp::HostUdpSocket for RunState {
    fn start_bind(
        &mut self,
        _this: Resource<Never>,
        _network: Resource<Network>,
        _local_address: IpSocketAddress,
    ) -> Result<(), SocketError> {
        never()
    }
    fn finish_bind(&mut self, _this: Resource<Never>) -> Result<(), SocketError> {
        never()
    }
    fn stream(
        &mut self,
        _this: Resource<Never>,
        _remote_address: Option<IpSocketAddress>,
    ) -> Result<(Resource<Never>, Resource<Never>), SocketError> {
        never()
    }
    fn local_address(&mut self, _this: Resource<Never>) -> Result<IpSocketAddress, SocketError> {
        never()
    }
    fn remote_address(&mut self, _this: Resource<Never>) -> Result<IpSocketAddress, SocketError> {
        never()
    }
    fn address_family(
        &mut self,
        _this: Resource<Never>,
    ) -> Result<IpAddressFamily, wasmtime::Error> {
        never()
    }
    fn unicast_hop_limit(&mut self, _this: Resource<Never>) -> Result<u8, SocketError> {
        never()
    }
    fn set_unicast_hop_limit(
        &mut self,
        _this: Resource<Never>,
        _value: u8,
    ) -> Result<(), SocketError> {
        never()
    }
    fn receive_buffer_size(&mut self, _this: Resource<Never>) -> Result<u64, SocketError> {
        never()
    }
    fn set_receive_buffer_size(
        &mut self,
        _this: Resource<Never>,
        _value: u64,
    ) -> Result<(), SocketError> {
        never()
    }
    fn send_buffer_size(&mut self, _this: Resource<Never>) -> Result<u64, SocketError> {
        never()
    }
    fn set_send_buffer_size(
        &mut self,
        _this: Resource<Never>,
        _value: u64,
    ) -> Result<(), SocketError> {
        never()
    }
    fn subscribe(&mut self, _this: Resource<Never>) -> wasmtime::Result<Resource<Pollable>> {
        never()
    }
    fn drop(&mut self, _this: Resource<Never>) -> Result<(), wasmtime::Error> {
        never()
    }
}

impl wasi::sockets::udp::HostIncomingDatagramStream for RunState {
    fn receive(
        &mut self,
        _this: Resource<Never>,
        _max_results: u64,
    ) -> Result<Vec<udp::IncomingDatagram>, SocketError> {
        never()
    }
    fn subscribe(&mut self, _this: Resource<Never>) -> wasmtime::Result<Resource<Pollable>> {
        never()
    }
    fn drop(&mut self, _this: Resource<Never>) -> Result<(), wasmtime::Error> {
        never()
    }
}

impl wasi::sockets::udp::HostOutgoingDatagramStream for RunState {
    fn check_send(&mut self, _this: Resource<Never>) -> Result<u64, SocketError> {
        never()
    }
    fn send(
        &mut self,
        _this: Resource<Never>,
        _datagrams: Vec<udp::OutgoingDatagram>,
    ) -> Result<u64, SocketError> {
        never()
    }
    fn subscribe(&mut self, _this: Resource<Never>) -> wasmtime::Result<Resource<Pollable>> {
        never()
    }
    fn drop(&mut self, _this: Resource<Never>) -> Result<(), wasmtime::Error> {
        never()
    }
}

impl wasi::sockets::ip_name_lookup::HostResolveAddressStream for RunState {
    fn resolve_next_address(
        &mut self,
        _resource: Resource<Never>,
    ) -> Result<Option<IpAddress>, SocketError> {
        never()
    }
    fn subscribe(&mut self, _resource: Resource<Never>) -> wasmtime::Result<Resource<Pollable>> {
        never()
    }
    fn drop(&mut self, _resource: Resource<Never>) -> wasmtime::Result<()> {
        never()
    }
}
