//! WASI resources a worldline guest can never hold: file descriptors (no
//! directory is preopened), sockets (creating one is denied) and name
//! lookups (denied). The component model only lets a guest pass handles
//! it was given, so these methods are unreachable; each traps if it is
//! ever called.

use super::RunState;
use super::bindings::wasi;
use super::bindings::wasi::filesystem::types as fst;
use super::bindings::wasi::sockets::ip_name_lookup::IpAddress;
use super::bindings::wasi::sockets::network::{IpAddressFamily, IpSocketAddress};
use super::bindings::wasi::sockets::tcp::ShutdownType;
use super::bindings::wasi::sockets::udp;
use super::bindings::{FsError, InputStream, Network, Never, OutputStream, Pollable, SocketError};
use wasmtime::component::Resource;

fn never<T, E: From<wasmtime::Error>>() -> Result<T, E> {
    Err(wasmtime::Error::msg("this resource cannot exist in a worldline run").into())
}

impl wasi::filesystem::types::HostDescriptor for RunState {
    fn advise(
        &mut self,
        _fd: Resource<Never>,
        _offset: fst::Filesize,
        _len: fst::Filesize,
        _advice: fst::Advice,
    ) -> Result<(), FsError> {
        never()
    }
    fn sync_data(&mut self, _fd: Resource<Never>) -> Result<(), FsError> {
        never()
    }
    fn get_flags(&mut self, _fd: Resource<Never>) -> Result<fst::DescriptorFlags, FsError> {
        never()
    }
    fn get_type(&mut self, _fd: Resource<Never>) -> Result<fst::DescriptorType, FsError> {
        never()
    }
    fn set_size(&mut self, _fd: Resource<Never>, _size: fst::Filesize) -> Result<(), FsError> {
        never()
    }
    fn set_times(
        &mut self,
        _fd: Resource<Never>,
        _atim: fst::NewTimestamp,
        _mtim: fst::NewTimestamp,
    ) -> Result<(), FsError> {
        never()
    }
    fn read(
        &mut self,
        _fd: Resource<Never>,
        _len: fst::Filesize,
        _offset: fst::Filesize,
    ) -> Result<(Vec<u8>, bool), FsError> {
        never()
    }
    fn write(
        &mut self,
        _fd: Resource<Never>,
        _buf: Vec<u8>,
        _offset: fst::Filesize,
    ) -> Result<fst::Filesize, FsError> {
        never()
    }
    fn read_directory(&mut self, _fd: Resource<Never>) -> Result<Resource<Never>, FsError> {
        never()
    }
    fn sync(&mut self, _fd: Resource<Never>) -> Result<(), FsError> {
        never()
    }
    fn create_directory_at(&mut self, _fd: Resource<Never>, _path: String) -> Result<(), FsError> {
        never()
    }
    fn stat(&mut self, _fd: Resource<Never>) -> Result<fst::DescriptorStat, FsError> {
        never()
    }
    fn stat_at(
        &mut self,
        _fd: Resource<Never>,
        _path_flags: fst::PathFlags,
        _path: String,
    ) -> Result<fst::DescriptorStat, FsError> {
        never()
    }
    fn set_times_at(
        &mut self,
        _fd: Resource<Never>,
        _path_flags: fst::PathFlags,
        _path: String,
        _atim: fst::NewTimestamp,
        _mtim: fst::NewTimestamp,
    ) -> Result<(), FsError> {
        never()
    }
    fn link_at(
        &mut self,
        _fd: Resource<Never>,
        _old_path_flags: fst::PathFlags,
        _old_path: String,
        _new_descriptor: Resource<Never>,
        _new_path: String,
    ) -> Result<(), FsError> {
        never()
    }
    fn open_at(
        &mut self,
        _fd: Resource<Never>,
        _path_flags: fst::PathFlags,
        _path: String,
        _oflags: fst::OpenFlags,
        _flags: fst::DescriptorFlags,
    ) -> Result<Resource<Never>, FsError> {
        never()
    }
    fn drop(&mut self, _fd: Resource<Never>) -> wasmtime::Result<()> {
        never()
    }
    fn readlink_at(&mut self, _fd: Resource<Never>, _path: String) -> Result<String, FsError> {
        never()
    }
    fn remove_directory_at(&mut self, _fd: Resource<Never>, _path: String) -> Result<(), FsError> {
        never()
    }
    fn rename_at(
        &mut self,
        _fd: Resource<Never>,
        _old_path: String,
        _new_fd: Resource<Never>,
        _new_path: String,
    ) -> Result<(), FsError> {
        never()
    }
    fn symlink_at(
        &mut self,
        _fd: Resource<Never>,
        _src_path: String,
        _dest_path: String,
    ) -> Result<(), FsError> {
        never()
    }
    fn unlink_file_at(&mut self, _fd: Resource<Never>, _path: String) -> Result<(), FsError> {
        never()
    }
    fn read_via_stream(
        &mut self,
        _fd: Resource<Never>,
        _offset: fst::Filesize,
    ) -> Result<Resource<InputStream>, FsError> {
        never()
    }
    fn write_via_stream(
        &mut self,
        _fd: Resource<Never>,
        _offset: fst::Filesize,
    ) -> Result<Resource<OutputStream>, FsError> {
        never()
    }
    fn append_via_stream(
        &mut self,
        _fd: Resource<Never>,
    ) -> Result<Resource<OutputStream>, FsError> {
        never()
    }
    fn is_same_object(
        &mut self,
        _a: Resource<Never>,
        _b: Resource<Never>,
    ) -> wasmtime::Result<bool> {
        never()
    }
    fn metadata_hash(&mut self, _fd: Resource<Never>) -> Result<fst::MetadataHashValue, FsError> {
        never()
    }
    fn metadata_hash_at(
        &mut self,
        _fd: Resource<Never>,
        _path_flags: fst::PathFlags,
        _path: String,
    ) -> Result<fst::MetadataHashValue, FsError> {
        never()
    }
}

impl wasi::filesystem::types::HostDirectoryEntryStream for RunState {
    fn read_directory_entry(
        &mut self,
        _stream: Resource<Never>,
    ) -> Result<Option<fst::DirectoryEntry>, FsError> {
        never()
    }
    fn drop(&mut self, _stream: Resource<Never>) -> wasmtime::Result<()> {
        never()
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
