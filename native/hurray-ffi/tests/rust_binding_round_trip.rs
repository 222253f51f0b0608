//! A Rust binding's round trip through the C entry points (docs/spec/c-abi.md §From Rust), kept
//! as the original example was written: its items at module level and its statements inside one
//! test function. Nothing else is changed, so its `use` paths (the public paths that section
//! lists) are part of what this test proves.
#![allow(unused_must_use, clippy::all)]

use hurray_core::{
    BufferHandle, DeviceTag, ElementType, LayoutDescriptor, Shape, SyncMode, TensorDescriptor, MIN_BUFFER_ALIGNMENT,
};
use hurray_ffi::{
    buffer::{hurray_buffer_byte_size, hurray_buffer_data_ptr},
    buffer_list::hurray_buffer_list_get,
    hurray_descriptor_decode, hurray_reader_destroy, hurray_reader_new, hurray_reader_next_tensor,
    hurray_tensor_buffers, hurray_tensor_destroy, hurray_writer_destroy, hurray_writer_new, hurray_writer_write_tensor,
    HurrayBuffer, HurrayBufferList, HurrayDescriptor, HurrayIoSlice, HurrayReader, HurrayStatus, HurrayTensor,
    HurrayTransport, HurrayWriter, HURRAY_END_OF_STREAM, HURRAY_OK,
};
use std::ffi::c_void;
/// Stands in for a socket: bytes, a read cursor, and a small transfer size so the short
/// read and short write paths are the ones exercised.
struct Pipe {
    bytes: Vec<u8>,
    read_pos: usize,
    chunk: usize,
}
unsafe extern "C" fn pipe_read(ctx: *mut c_void, dst: *mut u8, len: usize, out_filled: *mut usize) -> HurrayStatus {
    let pipe = &mut *(ctx as *mut Pipe);
    let n = len.min(pipe.chunk).min(pipe.bytes.len() - pipe.read_pos);
    std::ptr::copy_nonoverlapping(pipe.bytes.as_ptr().add(pipe.read_pos), dst, n);
    pipe.read_pos += n;
    *out_filled = n; // 0 means end of input; fewer than `len` does not
    HURRAY_OK
}
unsafe extern "C" fn pipe_write(ctx: *mut c_void, src: *const u8, len: usize, out_written: *mut usize) -> HurrayStatus {
    let pipe = &mut *(ctx as *mut Pipe);
    let n = len.min(pipe.chunk);
    pipe.bytes.extend_from_slice(std::slice::from_raw_parts(src, n));
    *out_written = n; // never 0: that would mean the sink is closed
    HURRAY_OK
}
fn vtable(pipe: &mut Pipe) -> HurrayTransport {
    HurrayTransport {
        ctx: pipe as *mut Pipe as *mut c_void,
        read: Some(pipe_read),
        write: Some(pipe_write),
        release: None, // the context is ours; Hurray never frees it
        // A stream needs no range reads: `read_at` and `size` stay null.
        ..HurrayTransport::default()
    }
}

#[test]
fn a_rust_binding_writes_and_reads_a_tensor_through_the_c_entry_points() {
    let handle = BufferHandle::new(64, MIN_BUFFER_ALIGNMENT, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap();
    let descriptor = TensorDescriptor::new(
        1,
        0,
        ElementType::Uint8,
        Shape::new(vec![64u64]).unwrap(),
        0,
        LayoutDescriptor::RowMajor,
        vec![handle],
        None,
        None,
        None,
        None,
    )
    .unwrap();
    let payload: Vec<u8> = (0u8..64).collect();
    let mut pipe = Pipe { bytes: Vec::new(), read_pos: 0, chunk: 24 };
    // A C caller names a descriptor by decoding its bytes.
    let encoded = descriptor.encode().unwrap();
    let mut descriptor_handle: *mut HurrayDescriptor = std::ptr::null_mut();
    // SAFETY: `encoded` and `pipe` outlive every handle made in this block, each destroyed once; out-pointers are live
    // locals.
    unsafe {
        assert_eq!(hurray_descriptor_decode(encoded.as_ptr(), encoded.len(), &mut descriptor_handle), HURRAY_OK);
        // Write.
        let transport = vtable(&mut pipe);
        let mut writer: *mut HurrayWriter = std::ptr::null_mut();
        assert_eq!(hurray_writer_new(&transport, std::ptr::null(), &mut writer), HURRAY_OK);
        let slice = HurrayIoSlice { ptr: payload.as_ptr(), len: payload.len() };
        assert_eq!(hurray_writer_write_tensor(writer, descriptor_handle, &slice, 1), HURRAY_OK);
        hurray_writer_destroy(&mut writer);
        // Read it back.
        let transport = vtable(&mut pipe);
        let mut reader: *mut HurrayReader = std::ptr::null_mut();
        assert_eq!(hurray_reader_new(&transport, std::ptr::null(), &mut reader), HURRAY_OK);
        let mut tensor: *mut HurrayTensor = std::ptr::null_mut();
        assert_eq!(hurray_reader_next_tensor(reader, &mut tensor), HURRAY_OK);
        let mut list: *mut HurrayBufferList = std::ptr::null_mut();
        hurray_tensor_buffers(tensor, &mut list);
        let mut buffer: *mut HurrayBuffer = std::ptr::null_mut();
        hurray_buffer_list_get(list, 0, &mut buffer);
        let mut data: *mut c_void = std::ptr::null_mut();
        let mut size: u64 = 0;
        hurray_buffer_data_ptr(buffer, &mut data);
        hurray_buffer_byte_size(buffer, &mut size);
        assert_eq!(std::slice::from_raw_parts(data as *const u8, size as usize), &payload[..]);
        // The declared alignment survives the trip into C.
        assert_eq!(data as usize % MIN_BUFFER_ALIGNMENT as usize, 0);
        hurray_tensor_destroy(&mut tensor);
        assert_eq!(hurray_reader_next_tensor(reader, &mut tensor), HURRAY_END_OF_STREAM);
        hurray_reader_destroy(&mut reader);
        hurray_ffi::descriptor::hurray_descriptor_destroy(descriptor_handle);
    }
}
