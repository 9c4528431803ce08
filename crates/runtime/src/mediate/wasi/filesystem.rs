//! `wasi:filesystem`: nothing is preopened.
//!
//! - virtual: the list of preopened directories, which is empty;
//! - recorded: that list, and error-code lookups;
//! - denied: everything else, by construction: without a preopen the guest
//!   can never hold a descriptor, so the descriptor and directory-stream
//!   methods are unreachable and trap if ever called.

use super::super::RunState;
use super::super::bindings::wasi::filesystem::types as fst;
use super::super::bindings::{FsError, InputStream, IoError, Never, OutputStream, wasi};
use super::never;
use serde_json::{Value, json};
use wasmtime::component::Resource;

impl wasi::filesystem::preopens::Host for RunState {
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<Never>, String)>> {
        self.call_fixed(
            "wasi:filesystem/preopens.get-directories",
            json!({}),
            json!([]),
        )?;
        Ok(Vec::new())
    }
}

impl wasi::filesystem::types::Host for RunState {
    fn convert_error_code(
        &mut self,
        err: FsError,
    ) -> wasmtime::Result<wasi::filesystem::types::ErrorCode> {
        match err {
            FsError::Code(c) => Ok(c),
            FsError::Trap(e) => Err(e),
        }
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<IoError>,
    ) -> wasmtime::Result<Option<wasi::filesystem::types::ErrorCode>> {
        self.call_fixed(
            "wasi:filesystem/types.filesystem-error-code",
            json!({"handle": err.rep()}),
            Value::Null,
        )?;
        Ok(None)
    }
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
